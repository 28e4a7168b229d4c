// Runs `baton serve` (src/daemon/main.ts) as its own process for the HTTP scenario:
// bench handlers loaded via BATON_HANDLERS, a free port, ready when /readyz answers 200.

import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { QUEUE, type Variant } from './systems/types.ts';

const MAIN = fileURLToPath(new URL('../src/daemon/main.ts', import.meta.url));
const HANDLERS = fileURLToPath(new URL('./child/daemon-handlers.ts', import.meta.url));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

export interface Daemon {
  base: string;
  proc: ChildProcess;
  /** SIGTERM (drain), then wait for exit; SIGKILL after 20 s. */
  stop(): Promise<number | null>;
}

export async function startDaemon(v: Variant, url: string, startsFile: string): Promise<Daemon> {
  const o = v.options as { dispatch: string; claimIntoRunning: boolean; concurrency: number; poolSize: number };
  const port = await freePort();
  let stderr = '';
  const proc = spawn(process.execPath, ['--import', 'tsx', MAIN, 'serve'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL: url,
      PORT: String(port),
      HOST: '127.0.0.1',
      BATON_QUEUES: `${QUEUE}:${o.concurrency}`,
      BATON_DISPATCH: o.dispatch,
      BATON_CLAIM_INTO_RUNNING: String(o.claimIntoRunning),
      BATON_POOL_SIZE: String(o.poolSize),
      BATON_HANDLERS: HANDLERS,
      BATON_DEMO_HANDLERS: 'false',
      BATON_DRAIN_MS: '2000',
      LOG_LEVEL: 'error',
      BENCH_STARTS_FILE: startsFile,
    },
  });
  proc.stderr?.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-3000);
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  let exitedEarly = false;
  void exited.then(() => {
    exitedEarly = true;
  });
  for (;;) {
    if (exitedEarly) throw new Error(`baton serve exited during start-up: ${stderr.trim().slice(-800)}`);
    try {
      const r = await request(`${base}/readyz`);
      await r.body.dump();
      if (r.statusCode === 200) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`baton serve not ready within 30 s: ${stderr.trim().slice(-800)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    base,
    proc,
    async stop() {
      if (proc.exitCode !== null) return proc.exitCode;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}
