// Worker processes for the multi-process tests: each runs the real engine on queue `flow`
// (flow-control-worker.ts) with its own execution log, ready once it printed 'ready'.
// useFleet registers the clean-up: every process still alive is killed, the logs removed.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach } from 'vitest';
import type { TestDatabase } from '../helpers/db.ts';

const WORKER_TS = new URL('./flow-control-worker.ts', import.meta.url).pathname;

export interface Fleet {
  logs: string[];
  children: ChildProcess[];
  killedAt: Map<string, number>;
}

/** Starts `n` worker processes of `concurrency` slots each on the file's database, after every test stopped. */
export function useFleet(db: TestDatabase): (n: number, concurrency?: number) => Promise<Fleet> {
  let fleet: Fleet | null = null;
  let dir = '';
  afterEach(() => {
    for (const c of fleet?.children ?? []) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    fleet = null;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return async (n, concurrency = 4) => {
    dir = mkdtempSync(path.join(tmpdir(), 'baton-fleet-'));
    const f: Fleet = { logs: [], children: [], killedAt: new Map() };
    fleet = f;
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const log = path.join(dir, `w${i}.jsonl`);
        f.logs.push(log);
        const child = spawn(process.execPath, ['--import', 'tsx', WORKER_TS], {
          env: { ...process.env, FLOW_DB_URL: db.url, FLOW_LOG: log, FLOW_WORKER: `w${i}`, FLOW_CONCURRENCY: String(concurrency) },
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        f.children.push(child);
        await new Promise<void>((resolve, reject) => {
          child.once('exit', (code) => reject(new Error(`worker w${i} exited (${code}) before it was ready`)));
          createInterface({ input: child.stdout! }).on('line', (l) => l === 'ready' && resolve());
        });
      }),
    );
    return f;
  };
}
