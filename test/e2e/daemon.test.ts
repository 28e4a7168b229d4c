// The real daemon as a child process with DATABASE_URL unset (embedded
// PostgreSQL in a temp data dir): enqueue over HTTP, see the job succeed, SIGTERM
// in the middle of a job and see it finish before a clean exit; restart on the
// same data dir and read the rows. Plus: a bad setting exits 2 naming it.

import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.ts';
import { type DaemonProcess, freePort, runBaton, waitExit, waitReady } from './daemon-process.ts';

const started: DaemonProcess[] = [];
const dirs: string[] = [];

afterAll(async () => {
  for (const d of started) d.kill();
  for (const dir of dirs) {
    // A postmaster a failed test left behind (its sentinel stops it only once the daemon is gone).
    const pidFile = path.join(dir, 'pg', 'postmaster.pid');
    if (existsSync(pidFile)) {
      const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
      try {
        process.kill(pid, 'SIGQUIT');
      } catch {
        /* already gone */
      }
      await waitFor(() => !existsSync(pidFile), { timeoutMs: 15_000, message: 'orphan postmaster gone' }).catch(() => undefined);
    }
    await rm(dir, { recursive: true, force: true });
  }
});

async function tempDataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'baton-e2e-'));
  // Under root the embedded server runs as `postgres`, which must be able to enter the dir.
  await chmod(dir, 0o755);
  dirs.push(dir);
  return dir;
}

async function api<T = any>(base: string, method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${p}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

describe('baton serve (embedded PostgreSQL)', () => {
  it('runs jobs, drains an in-flight job on SIGTERM, exits 0, and keeps its data across a restart', async () => {
    const dataDir = await tempDataDir();
    const pgPort = await freePort();
    const common = {
      BATON_DATA_DIR: dataDir,
      BATON_PG_PORT: String(pgPort),
      // Short lease: a 2.5 s job lives through ~7 heartbeats; a missed one would expire the lease.
      BATON_LEASE_MS: '1000',
      BATON_DRAIN_MS: '20000',
      BATON_HANDLERS: 'examples/handlers.ts',
      LOG_LEVEL: 'info',
    };

    // --- first run: initialises the data dir ---
    const port1 = await freePort();
    const base1 = `http://127.0.0.1:${port1}`;
    const d1 = runBaton(['serve', '--port', String(port1)], common);
    started.push(d1);
    await waitReady(d1, base1);

    const noop = await api(base1, 'POST', '/api/jobs', { jobType: 'noop', payload: { n: 1 } });
    expect(noop.status).toBe(201);
    await waitFor(async () => (await api(base1, 'GET', `/api/jobs/${noop.body.id}`)).body.state === 'succeeded', {
      timeoutMs: 15_000,
      message: 'noop job to succeed',
    });

    // A handler from the user module named by BATON_HANDLERS.
    const greet = await api(base1, 'POST', '/api/jobs', { jobType: 'greet', payload: { name: 'e2e' } });
    expect(greet.status).toBe(201);
    const greeted = await waitFor(
      async () => {
        const j = (await api(base1, 'GET', `/api/jobs/${greet.body.id}`)).body;
        return j.state === 'succeeded' ? j : null;
      },
      { timeoutMs: 15_000, message: 'greet job to succeed' },
    );
    expect(greeted.result).toEqual({ greeting: 'Hello, e2e!', attempt: 1 });

    const sleep = await api(base1, 'POST', '/api/jobs', { jobType: 'sleep', payload: { ms: 2500 } });
    expect(sleep.status).toBe(201);
    await waitFor(async () => (await api(base1, 'GET', `/api/jobs/${sleep.body.id}`)).body.state === 'running', {
      timeoutMs: 15_000,
      intervalMs: 25,
      message: 'sleep job to be running',
    });
    d1.child.kill('SIGTERM');
    expect(await waitExit(d1, 40_000), d1.output()).toBe(0);
    // The postmaster was stopped (a clean shutdown removes its pid file).
    expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);

    // --- second run on the same data dir; it works another queue so it cannot touch our rows ---
    const port2 = await freePort();
    const base2 = `http://127.0.0.1:${port2}`;
    const d2 = runBaton(['serve', '--port', String(port2), '--queues', 'elsewhere:1'], common);
    started.push(d2);
    await waitReady(d2, base2);
    expect(d2.output()).not.toContain('initialising embedded PostgreSQL');

    const client = new pg.Client({ connectionString: `postgres://postgres:baton@127.0.0.1:${pgPort}/postgres` });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT id::text, state, attempt, jsonb_array_length(errors) AS failures, result, finished_at IS NOT NULL AS finished
           FROM baton.jobs WHERE id = ANY($1::bigint[]) ORDER BY id`,
        [[noop.body.id, sleep.body.id]],
      );
      expect(rows).toEqual([
        { id: noop.body.id, state: 'succeeded', attempt: 1, failures: 0, result: { ok: true }, finished: true },
        // Finished by the draining daemon on its first attempt: not aborted, not released, not retried.
        { id: sleep.body.id, state: 'succeeded', attempt: 1, failures: 0, result: { sleptMs: 2500 }, finished: true },
      ]);
    } finally {
      await client.end();
    }

    d2.child.kill('SIGTERM');
    expect(await waitExit(d2, 40_000), d2.output()).toBe(0);
  }, 180_000);

  it('a signal repeated after the window forces exit (130) without waiting for the job, and still stops the embedded PostgreSQL', async () => {
    const dataDir = await tempDataDir();
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const d = runBaton(['serve', '--port', String(port)], {
      BATON_DATA_DIR: dataDir,
      BATON_PG_PORT: String(await freePort()),
      BATON_DRAIN_MS: '60000',
    });
    started.push(d);
    await waitReady(d, base);
    const job = await api(base, 'POST', '/api/jobs', { jobType: 'sleep', payload: { ms: 60_000 } });
    await waitFor(async () => (await api(base, 'GET', `/api/jobs/${job.body.id}`)).body.state === 'running', {
      timeoutMs: 15_000,
      message: 'long sleep job to be running',
    });
    d.child.kill('SIGTERM');
    await waitFor(() => d.output().includes('shutting down'), { timeoutMs: 10_000, message: 'drain to begin' });
    // Repeats within REPEAT_SIGNAL_WINDOW_MS join the drain; keep signalling until one forces.
    let exitCode: number | undefined;
    void d.exited.then((c) => (exitCode = c));
    await waitFor(
      () => {
        if (exitCode === undefined) d.child.kill('SIGTERM');
        return exitCode !== undefined;
      },
      { timeoutMs: 15_000, intervalMs: 250, message: 'a repeated SIGTERM to force exit' },
    );
    expect(exitCode, d.output()).toBe(130);
    await waitFor(() => !existsSync(path.join(dataDir, 'pg', 'postmaster.pid')), {
      timeoutMs: 15_000,
      message: 'embedded postmaster to stop after a forced exit',
    });
  }, 120_000);

  it('refuses a bad setting with exit code 2 and a message naming it, starting nothing', async () => {
    const dataDir = path.join(await tempDataDir(), 'never');
    const d = runBaton(['serve'], { PORT: 'eighty', BATON_DATA_DIR: dataDir });
    started.push(d);
    expect(await waitExit(d, 30_000)).toBe(2);
    expect(d.output()).toMatch(/PORT \(--port\).*"eighty"/);
    expect(existsSync(dataDir)).toBe(false);

    const flag = runBaton(['serve', '--queues', 'default:zero'], { BATON_DATA_DIR: dataDir });
    started.push(flag);
    expect(await waitExit(flag, 30_000)).toBe(2);
    expect(flag.output()).toContain('BATON_QUEUES (--queues)');

    // A handler module that does not exist fails before any database is started.
    const handlers = runBaton(['serve', '--handlers', './no-such-handlers.ts'], { BATON_DATA_DIR: dataDir });
    started.push(handlers);
    expect(await waitExit(handlers, 30_000)).toBe(2);
    expect(handlers.output()).toContain('BATON_HANDLERS (--handlers)');
    expect(existsSync(dataDir)).toBe(false);
  });
});
