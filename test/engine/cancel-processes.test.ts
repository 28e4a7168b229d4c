// Cancelling running jobs held by other processes (test/engine/cancel-worker.ts): the request
// reaches the holder's ctx.signal at once by NOTIFY, or at its next heartbeat without LISTEN,
// and the final state says what the handler did: cancelled when it stopped on the signal,
// succeeded (the request kept beside it) when it finished anyway, cancelled when its worker
// died under it (the reaper's give-back never makes it pending: another live worker on the
// queue never starts it again). Timings come from the handlers' own reports, on a clock every
// process shares; set BATON_MEASURE=1 to print the request-to-abort figures.

import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Baton, createBaton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';

const db = useTestDatabase();
const WORKER_TS = new URL('./cancel-worker.ts', import.meta.url).pathname;
const now = () => performance.timeOrigin + performance.now();
/** The workers' lease: heartbeats every 500 ms. */
const LEASE_MS = 1_500;
const HEARTBEAT_MS = LEASE_MS / 3;

interface Line {
  ev: 'ready' | 'start' | 'aborted' | 'end';
  job?: string;
  t: number;
  reason?: string;
  outcome?: string;
  attempt?: number;
}

interface Worker {
  child: ChildProcess;
  lines: Line[];
}

const workers: Worker[] = [];

async function startWorker(queue: string, dispatch: 'notify' | 'poll'): Promise<Worker> {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER_TS], {
    env: { ...process.env, CANCEL_DB_URL: db.url, CANCEL_QUEUE: queue, CANCEL_DISPATCH: dispatch, CANCEL_LEASE_MS: String(LEASE_MS) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const w: Worker = { child, lines: [] };
  workers.push(w);
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`cancel worker exited (${code}) before it was ready`)));
    createInterface({ input: child.stdout! }).on('line', (l) => {
      const line = JSON.parse(l) as Line;
      w.lines.push(line);
      if (line.ev === 'ready') resolve();
    });
  });
  return w;
}

const seen = (w: Worker, ev: Line['ev'], job: string) => w.lines.find((l) => l.ev === ev && l.job === job) ?? null;
const jobRow = async (id: string) => (await db.query('SELECT * FROM baton.jobs WHERE id = $1', [id])).rows[0];

let admin: Baton;
let notifyWorker: Worker;
let pollWorker: Worker;

beforeAll(async () => {
  // The test's own engine: enqueues and cancels, and (working a queue of its own) may be the
  // leader that runs the reaper. Its cancels reach the workers' jobs only through the database.
  admin = createBaton({ connectionString: db.url, poolSize: 2, queues: { 'cancel-idle': 1 }, leaseMs: LEASE_MS, fastReclaimGraceMs: 200 });
  await admin.start();
  [notifyWorker, pollWorker] = await Promise.all([startWorker('cancel-notify', 'notify'), startWorker('cancel-poll', 'poll')]);
}, 60_000);

afterAll(async () => {
  for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
  await admin?.stop();
});

/** Enqueues a job of `jobType` on `queue` and waits for `w` to start it; answers its id. */
async function running(w: Worker, queue: string, jobType: string): Promise<string> {
  const { job } = await admin.enqueue({ jobType, queue, maxAttempts: 5 });
  await waitFor(() => seen(w, 'start', job.id), { message: `job ${job.id} started by its worker` });
  return job.id;
}

/** Requests the cancel; answers when it was sent (before the statement) and the job as answered. */
async function cancel(id: string) {
  const at = now();
  const job = await admin.admin.cancel(id);
  return { at, job };
}

describe('cancelling a job running in another process', () => {
  it('by NOTIFY: a handler that stops on the signal ends cancelled, at once, never retried', async () => {
    const id = await running(notifyWorker, 'cancel-notify', 'honour');
    const { at, job } = await cancel(id);
    expect(job).toMatchObject({ id, state: 'running' });
    expect(job.cancelRequestedAt).toBeInstanceOf(Date);
    const abort = await waitFor(() => seen(notifyWorker, 'aborted', id), { message: 'the handler signal aborted' });
    expect(abort.reason).toBe('JobCancelledError');
    // Well inside one heartbeat: the NOTIFY, not the heartbeat, carried it.
    expect(abort.t - at).toBeLessThan(HEARTBEAT_MS);
    await waitFor(async () => (await jobRow(id)).state === 'cancelled', { message: 'the job cancelled' });
    const r = await jobRow(id);
    expect(r).toMatchObject({ attempt: 1, lease_owner: null, dead_letter_reason: null });
    expect(r.last_error).toMatchObject({ kind: 'cancelled', name: 'JobCancelledError' });
    expect(r.cancel_requested_at).toBeInstanceOf(Date);
    expect(notifyWorker.lines.filter((l) => l.ev === 'start' && l.job === id)).toHaveLength(1);
  });

  it('by NOTIFY: a handler that ignores the signal and finishes anyway ends succeeded, the request recorded beside it', async () => {
    const id = await running(notifyWorker, 'cancel-notify', 'ignore');
    await cancel(id);
    await waitFor(() => seen(notifyWorker, 'end', id), { message: 'the handler finished' });
    await waitFor(async () => (await jobRow(id)).state === 'succeeded', { message: 'the job succeeded' });
    const j = await admin.admin.getJob(id);
    expect(j).toMatchObject({ state: 'succeeded', result: { finished: true }, attempt: 1 });
    expect(j.cancelRequestedAt).toBeInstanceOf(Date);
  });

  it('by heartbeat, with no LISTEN (dispatch poll): the signal aborts within about one heartbeat', async () => {
    const id = await running(pollWorker, 'cancel-poll', 'honour');
    const { at } = await cancel(id);
    const abort = await waitFor(() => seen(pollWorker, 'aborted', id), { message: 'the handler signal aborted' });
    expect(abort.reason).toBe('JobCancelledError');
    // One heartbeat period plus its round trip and the event loop's slack on a loaded machine.
    expect(abort.t - at).toBeLessThan(HEARTBEAT_MS + 1_000);
    await waitFor(async () => (await jobRow(id)).state === 'cancelled', { message: 'the job cancelled' });
  });

  it('a worker killed under a stubborn handler: the reaper ends the job cancelled, and no other worker runs it again', async () => {
    // Two workers on one queue: the one that starts the job is killed; the other, alive, would
    // start the job at once if it were ever pending again.
    const pair = await Promise.all([startWorker('cancel-kill', 'notify'), startWorker('cancel-kill', 'notify')]);
    const { job } = await admin.enqueue({ jobType: 'stubborn', queue: 'cancel-kill', maxAttempts: 5 });
    const id = job.id;
    const victim = await waitFor(() => pair.find((w) => seen(w, 'start', id)), { message: `job ${id} started` });
    const witness = pair.find((w) => w !== victim)!;
    await cancel(id);
    const killedAt = now();
    victim.child.kill('SIGKILL');
    await waitFor(async () => (await jobRow(id)).state === 'cancelled', {
      timeoutMs: 15_000,
      message: "the dead worker's job cancelled by the reaper",
    });
    if (process.env.BATON_MEASURE === '1') {
      process.stdout.write(`[cancel] kill -9 of the holder -> cancelled seen: ${(now() - killedAt).toFixed(0)} ms\n`);
    }
    const r = await jobRow(id);
    expect(['worker_gone', 'lease_expired']).toContain(r.last_error.kind);
    expect(r.attempt).toBe(1);
    // The witness is alive and polling its queue; the job is terminal, so it can never start it.
    expect(witness.child.exitCode).toBeNull();
    expect(witness.lines.filter((l) => l.ev === 'start')).toEqual([]);
  });

  it('measures request-to-abort across processes: by NOTIFY well under a heartbeat, by heartbeat within one', async () => {
    const sample = async (w: Worker, queue: string) => {
      const out: number[] = [];
      for (let i = 0; i < 10; i++) {
        const id = await running(w, queue, 'honour');
        const { at } = await cancel(id);
        const abort = await waitFor(() => seen(w, 'aborted', id), { message: `job ${id} aborted` });
        out.push(abort.t - at);
        await waitFor(async () => (await jobRow(id)).state === 'cancelled', { message: `job ${id} cancelled` });
      }
      return out.sort((a, b) => a - b);
    };
    const byNotify = await sample(notifyWorker, 'cancel-notify');
    const byHeartbeat = await sample(pollWorker, 'cancel-poll');
    if (process.env.BATON_MEASURE === '1') {
      const fmt = (xs: number[]) => `p50 ${xs[Math.floor(xs.length / 2)]!.toFixed(1)} ms, max ${xs.at(-1)!.toFixed(1)} ms`;
      process.stdout.write(`[cancel] request -> abort: NOTIFY ${fmt(byNotify)}; heartbeat (${HEARTBEAT_MS} ms) ${fmt(byHeartbeat)}\n`);
    }
    expect(byNotify.at(-1)!).toBeLessThan(HEARTBEAT_MS);
    expect(byHeartbeat.at(-1)!).toBeLessThan(HEARTBEAT_MS + 1_000);
  }, 60_000);
});
