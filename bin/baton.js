#!/usr/bin/env node
// The `baton` launcher: runs the compiled CLI (dist/) in this process, so the signals a
// terminal or a supervisor sends reach the daemon that drains. `npm run build` makes dist/
// (a published package ships it; in a clone, `npm start` and `npm test` build it first).
import { existsSync } from 'node:fs';

const main = new URL('../dist/daemon/main.js', import.meta.url);
if (!existsSync(main)) {
  console.error('baton: dist/ is not built; run `npm run build` (or `npm start`, which builds) in this checkout first');
  process.exit(1);
}
await import(main.href);
