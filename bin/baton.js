#!/usr/bin/env node
// The `baton` launcher: runs the compiled CLI (dist/) in this process, so the signals a
// terminal or a supervisor sends reach the daemon that drains. `npm run build` makes dist/.
await import('../dist/daemon/main.js');
