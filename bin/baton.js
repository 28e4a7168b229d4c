#!/usr/bin/env node
// The `baton` launcher: registers tsx's ESM loader in this process and runs the
// TypeScript CLI directly (no build step). Same process, so signals reach the daemon.
import { register } from 'tsx/esm/api';

register();
await import('../src/daemon/main.ts');
