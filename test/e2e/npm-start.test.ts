// `npm start` as an operator runs it, DATABASE_URL unset (embedded PostgreSQL):
// SIGTERM to npm, and Ctrl-C to the whole process group, drain an in-flight job
// and take the whole process tree down; a postmaster whose daemon died does not
// outlive it. One data dir serves every case (initdb once); each case leaves no
// process running, even when it fails.

import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { noopLogger } from '../../src/core/logger.ts';
import { startEmbeddedPostgres } from '../../src/daemon/embedded-pg.ts';
import { EXIT_OK } from '../../src/daemon/shutdown.ts';
import { argvOf, childrenOf, descendantsOf, isRunning, parentOf } from '../helpers/processes.ts';
import { waitFor } from '../helpers/wait.ts';
import { type DaemonProcess, freePort, runBaton, runNpmStart, waitExit, waitReady } from './daemon-process.ts';

/** Shorter than DRAIN_MS: the drain lets it finish. */
const JOB_MS = 1_500;
const DRAIN_MS = 20_000;
const EXIT_TIMEOUT_MS = 40_000;

let dataDir: string;
const spawned: DaemonProcess[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'baton-npm-start-'));
  // Under root the embedded server runs as `postgres`, which must be able to enter the dir.
  await chmod(dataDir, 0o755);
});

afterEach(async () => {
  for (const d of spawned.splice(0)) d.kill();
  await stopLeftoverPostmaster();
});

afterAll(async () => {
  await stopLeftoverPostmaster();
  await rm(dataDir, { recursive: true, force: true });
});

const pidFile = () => path.join(dataDir, 'pg', 'postmaster.pid');

async function postmasterPid(): Promise<number> {
  return Number((await readFile(pidFile(), 'utf8')).split('\n')[0]);
}

/** A postmaster a failed case left behind: stop it so the next case starts clean. */
async function stopLeftoverPostmaster(): Promise<void> {
  if (!existsSync(pidFile())) return;
  const pid = await postmasterPid();
  if (isRunning(pid)) process.kill(pid, 'SIGQUIT');
  await waitFor(() => !isRunning(pid), { timeoutMs: 15_000, message: `leftover postmaster ${pid} to stop` });
}

interface Started {
  npm: DaemonProcess;
  base: string;
}

/**
 * `npm start`. Only the first case runs its prestart build, as an operator's start does: the
 * others are about signals and the process tree, and skip it (npm's ignore-scripts skips pre and
 * post scripts, never the start script itself) rather than spend a no-op tsc run (about 3 s of
 * CPU) each.
 */
async function npmStart({ build = false }: { build?: boolean } = {}): Promise<Started> {
  const port = await freePort();
  const npm = runNpmStart({
    ...(build ? {} : { npm_config_ignore_scripts: 'true' }),
    BATON_DATA_DIR: dataDir,
    PORT: String(port),
    BATON_PG_PORT: String(await freePort()),
    BATON_DRAIN_MS: String(DRAIN_MS),
  });
  spawned.push(npm);
  const base = `http://127.0.0.1:${port}`;
  await waitReady(npm, base);
  return { npm, base };
}

async function jobState(base: string, id: string): Promise<string> {
  const res = await fetch(`${base}/api/jobs/${id}`);
  return ((await res.json()) as { state: string }).state;
}

async function enqueueSleep(base: string): Promise<string> {
  const res = await fetch(`${base}/api/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jobType: 'sleep', payload: { ms: JOB_MS } }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

async function waitRunning(base: string, id: string): Promise<void> {
  await waitFor(async () => (await jobState(base, id)) === 'running', { timeoutMs: 15_000, intervalMs: 25, message: `job ${id} running` });
}

/** Every process of the tree (npm, the daemon, the postmaster and its backends, helpers), now. */
function processTree(npm: DaemonProcess): number[] {
  return [npm.child.pid!, ...descendantsOf(npm.child.pid!)];
}

async function expectAllGone(pids: number[]): Promise<void> {
  await waitFor(
    () => {
      const left = pids.filter(isRunning);
      if (left.length > 0) throw new Error(`still running: ${left.map((p) => `${p} (${argvOf(p).join(' ')})`).join(', ')}`);
      return true;
    },
    { timeoutMs: 15_000, message: 'every process of the tree to exit' },
  );
  expect(existsSync(pidFile())).toBe(false);
}

/** The job's row, read with the daemon stopped: through an embedded server started here for the moment. */
async function jobRow(id: string): Promise<Record<string, unknown>> {
  const server = await startEmbeddedPostgres({ dataDir, port: await freePort(), logger: noopLogger });
  try {
    const client = new pg.Client({ connectionString: server.connectionString });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT state, attempt, jsonb_array_length(errors) AS failures, result FROM baton.jobs WHERE id = $1`,
        [id],
      );
      return rows[0];
    } finally {
      await client.end();
    }
  } finally {
    await server.stop();
  }
}

/** Log lines at warn level or above (pino: 40 and up). */
function warnings(stdout: string): string[] {
  return stdout.split('\n').filter((line) => line.startsWith('{') && (JSON.parse(line) as { level: number }).level >= 40);
}

const ranOnceAndSucceeded = { state: 'succeeded', attempt: 1, failures: 0, result: { sleptMs: JOB_MS } };

describe('npm start (embedded PostgreSQL)', () => {
  it('first start warns of nothing; SIGTERM to the npm process: the in-flight job finishes, the whole tree exits 0, no postmaster is left', async () => {
    const { npm, base } = await npmStart({ build: true });
    // This is the first start on the data dir (initdb, migrations): nothing alarming in it
    // but the notice that the API is open (no token, no key), on loopback only.
    const lines = warnings(npm.stdout());
    expect(lines.filter((l) => !l.includes('"auth":"open"'))).toEqual([]);
    expect(lines.filter((l) => l.includes('NO AUTHENTICATION'))).toHaveLength(1);
    const postmaster = await postmasterPid();
    // `baton enqueue` from a shell attaches to the live daemon's server and leaves it running.
    const enqueue = runBaton(['enqueue', '--type', 'noop'], { BATON_DATA_DIR: dataDir, BATON_PG_PORT: String(await freePort()) });
    spawned.push(enqueue);
    expect(await waitExit(enqueue, 30_000), enqueue.output()).toBe(0);
    const noop = (JSON.parse(enqueue.stdout()) as { job: { id: string } }).job.id;
    await waitFor(async () => (await jobState(base, noop)) === 'succeeded', { timeoutMs: 15_000, message: `job ${noop} to succeed` });
    expect(await postmasterPid()).toBe(postmaster);

    const id = await enqueueSleep(base);
    await waitRunning(base, id);

    const tree = processTree(npm);
    npm.child.kill('SIGTERM');
    expect(await waitExit(npm, EXIT_TIMEOUT_MS), npm.output()).toBe(EXIT_OK);
    await expectAllGone(tree);
    expect(await jobRow(id)).toEqual(ranOnceAndSucceeded);
  }, 120_000);

  it('Ctrl-C (SIGINT to the whole process group): an orderly exit, the job ran exactly once, nothing is left', async () => {
    const { npm, base } = await npmStart();
    const id = await enqueueSleep(base);
    await waitRunning(base, id);

    const tree = processTree(npm);
    process.kill(-npm.child.pid!, 'SIGINT');
    expect(await waitExit(npm, EXIT_TIMEOUT_MS), npm.output()).toBe(EXIT_OK);
    await expectAllGone(tree);
    expect(await jobRow(id)).toEqual(ranOnceAndSucceeded);
  }, 120_000);

  it('kill -9 of the daemon: nothing of its tree outlives it, and the next npm start starts normally', async () => {
    const first = await npmStart();
    const postmaster = await postmasterPid();
    const daemon = parentOf(postmaster)!;
    expect(parentOf(daemon), 'no shell between npm and the daemon').toBe(first.npm.child.pid);
    const tree = processTree(first.npm);
    process.kill(daemon, 'SIGKILL');
    await waitExit(first.npm, EXIT_TIMEOUT_MS);
    await expectAllGone(tree);

    const second = await npmStart();
    const secondTree = processTree(second.npm);
    second.npm.child.kill('SIGTERM');
    expect(await waitExit(second.npm, EXIT_TIMEOUT_MS), second.npm.output()).toBe(EXIT_OK);
    await expectAllGone(secondTree);
  }, 120_000);

  it('a server whose daemon died is stopped by the next npm start, which then starts its own', async () => {
    const first = await npmStart();
    const orphan = await postmasterPid();
    const daemon = parentOf(orphan)!;
    // Nothing of the daemon survives but its postmaster, as after a kill -9 of everything else.
    for (const p of childrenOf(daemon)) if (p !== orphan) process.kill(p, 'SIGKILL');
    process.kill(daemon, 'SIGKILL');
    await waitExit(first.npm, EXIT_TIMEOUT_MS);
    expect(isRunning(orphan)).toBe(true);

    const second = await npmStart();
    expect(isRunning(orphan)).toBe(false);
    expect(await postmasterPid()).not.toBe(orphan);
    const tree = processTree(second.npm);
    second.npm.child.kill('SIGTERM');
    expect(await waitExit(second.npm, EXIT_TIMEOUT_MS), second.npm.output()).toBe(EXIT_OK);
    await expectAllGone(tree);
  }, 120_000);
});
