// Run as root from a checkout the `postgres` OS user cannot enter (a 0700 directory,
// as under /root), the daemon with DATABASE_URL unset keeps its embedded cluster in a
// fallback it can reach, says where once, and finds the same cluster on the next start.
// Only as root (CI is): otherwise PostgreSQL runs as ourselves and there is no trap.

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, readdir, rm, rmdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fallbackDirs } from '../../src/daemon/embedded-data-dir.ts';
import { isRunning } from '../helpers/processes.ts';
import { waitFor } from '../helpers/wait.ts';
import { type DaemonProcess, freePort, runBaton, waitExit, waitReady } from './daemon-process.ts';

const asRoot = process.getuid?.() === 0;
const started: DaemonProcess[] = [];
const cleanups: Array<() => Promise<void>> = [];

afterAll(async () => {
  for (const d of started) d.kill();
  for (const c of cleanups.reverse()) await c();
});

/** Stops a postmaster a failed case left on `clusterDir` (its sentinel acts only once the daemon is gone). */
async function stopLeftover(clusterDir: string): Promise<void> {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (isRunning(pid)) process.kill(pid, 'SIGQUIT');
  await waitFor(() => !isRunning(pid), { timeoutMs: 15_000, message: `leftover postmaster ${pid} to stop` });
}

/** The daemon's log lines at warn level (pino 40), but the notice that the API is open (docs/security.md). */
function warnings(d: DaemonProcess): Array<{ msg: string; dataDir?: string; requested?: string }> {
  return d
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; auth?: string })
    .filter((e) => e.level === 40 && e.auth !== 'open');
}

describe.skipIf(!asRoot)('embedded data dir the postgres user cannot reach (as root)', () => {
  it('falls back to /var/lib/baton/<hash>, owned by postgres, says so once, and a restart reuses it', async () => {
    const checkout = await mkdtemp(path.join(os.tmpdir(), 'baton-unreachable-')); // 0700, root's
    const requested = path.join(checkout, '.baton-data');
    const fallback = fallbackDirs(requested)[0]!;
    const rootExisted = existsSync(path.dirname(fallback));
    cleanups.push(async () => {
      await stopLeftover(path.join(fallback, 'pg'));
      await rm(fallback, { recursive: true, force: true });
      if (!rootExisted && (await readdir(path.dirname(fallback)).catch(() => ['?'])).length === 0) await rmdir(path.dirname(fallback));
      await rm(checkout, { recursive: true, force: true });
    });
    expect(path.dirname(fallback)).toBe('/var/lib/baton');
    expect(existsSync(fallback), 'a fresh path has no fallback yet').toBe(false);

    const env = { BATON_DATA_DIR: requested, BATON_PG_PORT: String(await freePort()) };
    const start = async (): Promise<DaemonProcess> => {
      const port = await freePort();
      const d = runBaton(['serve', '--port', String(port)], env);
      started.push(d);
      await waitReady(d, `http://127.0.0.1:${port}`);
      return d;
    };
    const stop = async (d: DaemonProcess): Promise<void> => {
      d.child.kill('SIGTERM');
      expect(await waitExit(d, 40_000), d.output()).toBe(0);
    };

    const first = await start();
    expect(warnings(first)).toEqual([
      expect.objectContaining({
        requested,
        dataDir: fallback,
        msg: `the embedded PostgreSQL runs as the "postgres" OS user (we are root), which cannot enter ${checkout} (mode 700): keeping its data in ${fallback} instead of ${requested} (set BATON_DATA_DIR to choose the place)`,
      }),
    ]);
    expect(existsSync(path.join(fallback, 'pg', 'PG_VERSION'))).toBe(true);
    expect(statSync(fallback).uid).toBe(Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()));
    expect(existsSync(requested), 'nothing is made where the server cannot go').toBe(false);
    expect(first.output()).toContain('initialising embedded PostgreSQL');
    await stop(first);

    const second = await start();
    expect(second.output()).not.toContain('initialising embedded PostgreSQL');
    expect(warnings(second).map((w) => w.dataDir)).toEqual([fallback]);
    await stop(second);
  }, 180_000);
});
