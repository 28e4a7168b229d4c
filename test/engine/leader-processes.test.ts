// The leader lease across processes, with real signals: a leader child process killed -9 is
// replaced at once (its presence session is gone), long before its lease would expire; one
// stopped with SIGSTOP is replaced within about one lease, and once it runs again it acts as a
// follower: its retention, which deletes finished jobs at once while it leads, leaves alone the
// job that finished during its pause.

import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import type { Baton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob, jobRow } from '../helpers/factory.ts';
import { leaderLeaseRow } from '../helpers/leader.ts';
import { waitFor } from '../helpers/wait.ts';
import { useEngines } from './harness.ts';

const db = useTestDatabase();
const CHILD_TS = new URL('./leader-child.ts', import.meta.url).pathname;

interface Child {
  proc: ChildProcess;
  workerId: string;
  /** Every message, in order, with the parent's performance.now() on arrival. */
  messages: Array<{ type: string; leader?: boolean; at: number }>;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    c.kill('SIGCONT');
    c.kill('SIGKILL');
  }
});

async function startChild(leaseMs: number): Promise<Child> {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD_TS], {
    env: { ...process.env, LEADER_DB_URL: db.url, LEADER_LEASE_MS: String(leaseMs) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  children.push(proc);
  const child: Child = { proc, workerId: '', messages: [] };
  await new Promise<void>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`leader child exited (${code}) before it was ready`)));
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      const m = JSON.parse(line) as { type: string; workerId?: string; leader?: boolean };
      child.messages.push({ type: m.type, ...(m.leader === undefined ? {} : { leader: m.leader }), at: performance.now() });
      if (m.type === 'ready') {
        child.workerId = m.workerId!;
        resolve();
      }
    });
  });
  return child;
}

const leads = (c: Child) => c.messages.filter((m) => m.type === 'leadership').at(-1)?.leader === true;
const leadership = (engine: Baton, leader: boolean) =>
  new Promise<number>((resolve) => engine.events.on('leadership', (e) => e.leader === leader && resolve(performance.now())));

/** The child's stats().leader, answered after the timers that came due before the ping have run. */
async function ping(c: Child): Promise<boolean | undefined> {
  const n = c.messages.filter((m) => m.type === 'pong').length;
  c.proc.stdin!.write('ping\n');
  await waitFor(() => c.messages.filter((m) => m.type === 'pong').length > n, { message: 'the child to answer' });
  return c.messages.filter((m) => m.type === 'pong').at(-1)!.leader;
}

describe('the leader lease across processes', () => {
  const engines = useEngines(db);

  it('a leader killed with kill -9 is replaced at once, not at its lease’s expiry', { timeout: 30_000 }, async () => {
    const LEASE = 20_000;
    const child = await startChild(LEASE);
    await waitFor(() => leads(child), { message: 'the child to lead' });
    const follower = await engines.start({ queues: { q: 1 }, pollIntervalMs: 600_000, leaderLeaseMs: LEASE });
    const took = leadership(follower, true);
    const t0 = performance.now();
    child.proc.kill('SIGKILL');
    // The follower tries every leaderLeaseMs / 10 (2 s): the dead holder's presence lock is gone.
    expect((await took) - t0).toBeLessThan(LEASE / 10 + 3_000);
    expect((await leaderLeaseRow(db.pool)).holder).toBe(follower.config.workerId);
  });

  it('a leader stopped with SIGSTOP is replaced within about one lease, and after SIGCONT does nothing as leader', {
    timeout: 30_000,
  }, async () => {
    const LEASE = 1_000;
    const child = await startChild(LEASE);
    await waitFor(() => leads(child), { message: 'the child to lead' });
    // The follower keeps every finished job: only the child's retention deletes any.
    const follower = await engines.start({
      queues: { q: 1 },
      pollIntervalMs: 600_000,
      leaderLeaseMs: LEASE,
      retention: { succeededMs: null, cancelledMs: null, deadLetteredMs: null },
    });
    const before = await leaderLeaseRow(db.pool);
    const took = leadership(follower, true);
    const t0 = performance.now();
    child.proc.kill('SIGSTOP');
    const tookAt = await took;
    // Not before the child's lease could have expired by the database clock, and within about one lease.
    expect(tookAt - t0).toBeGreaterThan(0.8 * LEASE - LEASE / 10 - 50);
    expect(tookAt - t0).toBeLessThan(LEASE + LEASE / 10 + 2_000);
    const after = await leaderLeaseRow(db.pool);
    expect(after.holder).toBe(follower.config.workerId);
    expect(BigInt(after.epoch)).toBeGreaterThan(BigInt(before.epoch));
    // A job finishes while the child is stopped; then it runs again.
    const id = await insertJob(db.pool, { queue: 'q', state: 'succeeded', finishedAt: { inMs: -1_000 } });
    child.proc.kill('SIGCONT');
    expect(await ping(child)).toBe(false);
    expect(child.messages.filter((m) => m.type === 'leadership').at(-1)).toMatchObject({ leader: false });
    // Another round through its timers, then: the job is still there, the follower still leads.
    expect(await ping(child)).toBe(false);
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'succeeded' });
    expect((await leaderLeaseRow(db.pool)).epoch).toBe(after.epoch);
    expect(follower.stats().leader).toBe(true);
  });
});
