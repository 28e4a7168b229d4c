// Reaper end to end. A worker "dies" holding a job: it reaches PostgreSQL only
// through a TCP proxy that we make refuse and reset, and its presence session is
// terminated, so its advisory lock is gone for good. With fast reclaim another
// engine takes the job back after a short grace, well before the lease expires.
// Also: plain expired leases go back to pending (or dead-letter when spent).

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JobContext } from '../../src/index.ts';
import { FaultProxy } from '../chaos/fault-proxy.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { Signal, waitFor } from '../helpers/wait.ts';
import { Invocations, row, rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();
const VICTIM_LEASE_MS = 15_000;

describe.each([true, false])('reaper (claimIntoRunning=%s)', (claimIntoRunning) => {
  let proxy: FaultProxy;
  let proxiedUrl: string;
  afterEach(async () => {
    await proxy.close();
  });
  const engines = useEngines(db, () => ({ claimIntoRunning }));

  beforeEach(async () => {
    const target = new URL(db.url);
    proxy = new FaultProxy({ targetHost: target.hostname, targetPort: Number(target.port || 5432) });
    const port = await proxy.listen();
    const via = new URL(db.url);
    via.hostname = proxy.host;
    via.port = String(port);
    proxiedUrl = via.toString();
  });

  // Hooks run in reverse order of registration: heal, then the harness stops every engine, then close.
  // biome-ignore lint/suspicious/noDuplicateTestHooks: the harness's afterEach stops the engines; this one must heal the proxy first.
  afterEach(() => {
    // Let the "dead" worker reach the database again so its stop() is quick (its late writes are fenced).
    proxy.heal();
  });

  /** Starts the victim (through the proxy), has it claim one job and block in its handler. */
  async function victimHolding(spec: { maxAttempts: number }) {
    const entered = new Signal<JobContext>();
    const gate = engines.gate();
    const victim = await engines.start({
      connectionString: proxiedUrl,
      queues: { q: 1 },
      leaseMs: VICTIM_LEASE_MS,
      dispatch: 'poll',
      pollIntervalMs: 60_000,
      reaper: false,
      handlers: {
        work: async (ctx) => {
          entered.emit(ctx);
          await gate.promise;
          return { by: 'victim' };
        },
      },
    });
    const { job } = await victim.enqueue({ jobType: 'work', queue: 'q', maxAttempts: spec.maxAttempts });
    const ctx = await entered.next({ message: 'the victim to start its job' });
    const held = await row(db, job.id);
    expect(held).toMatchObject({ state: 'running', lease_owner: victim.config.workerId, attempt: 1 });
    return { victim, job, ctx, gate };
  }

  /** The victim process "dies": no new connections, every open one reset, its presence session terminated. */
  async function kill(): Promise<number> {
    proxy.setRefuse(true);
    const killed = await db.query<{ pid: number }>(
      `SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = 'baton-presence' AND datname = current_database()`,
    );
    expect(killed.rowCount).toBe(1);
    proxy.resetAll();
    const at = Date.now();
    // The presence lock is really gone (the session ended).
    await waitFor(async () => (await db.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1`, [killed.rows[0]!.pid])).rowCount === 0, {
      message: 'the presence backend to exit',
    });
    return at;
  }

  const rescuer = (calls: Invocations) =>
    engines.start({
      queues: { q: 1 },
      reaperIntervalMs: 50,
      fastReclaim: true,
      fastReclaimGraceMs: 200,
      handlers: {
        work: (ctx) => {
          calls.record(ctx);
          return { by: 'rescuer' };
        },
      },
    });

  it("fast reclaim: a dead worker's job runs elsewhere after the grace, long before its lease expires", async () => {
    const { job, ctx } = await victimHolding({ maxAttempts: 5 });
    const killedAt = await kill();

    const calls = new Invocations();
    const rescue = await rescuer(calls);
    const done = await rowInState(db, job.id, 'succeeded', VICTIM_LEASE_MS);
    const recoveredMs = Date.now() - killedAt;

    expect(recoveredMs).toBeLessThan(VICTIM_LEASE_MS / 3);
    expect(done.result).toEqual({ by: 'rescuer' });
    expect(done.attempt).toBe(2);
    expect(BigInt(done.lease_token!)).toBeGreaterThan(BigInt(ctx.token));
    expect(done.errors).toHaveLength(1);
    expect(done.errors[0]).toMatchObject({ kind: 'worker_gone', attempt: 1, token: ctx.token });
    expect(calls.of(job.id)).toBe(1);
    expect(rescue.stats().reclaimed).toBe(1);
    const workers = await rescue.admin.workers();
    expect(workers.find((w) => w.id === ctx.job.leaseOwner)?.alive).toBe(false);
  });

  it('fast reclaim with the attempt budget spent dead-letters the job instead of running it', async () => {
    const { job, ctx } = await victimHolding({ maxAttempts: 1 });
    await kill();

    const calls = new Invocations();
    await rescuer(calls);
    const dead = await rowInState(db, job.id, 'dead_lettered', VICTIM_LEASE_MS);
    expect(dead.dead_letter_reason).toBe('attempts_exhausted');
    expect(dead.attempt).toBe(1);
    expect(dead.lease_owner).toBeNull();
    expect(dead.errors).toHaveLength(1);
    expect(dead.errors[0]).toMatchObject({ kind: 'worker_gone', token: ctx.token });
    expect(calls.total).toBe(0);
  });

  it('an expired lease goes back to pending and runs again; with the budget spent it is dead-lettered', async () => {
    const owner = 'ghost-worker'; // never registered: only expiry can free its leases
    const retry = await insertJob(db.pool, {
      state: claimIntoRunning ? 'running' : 'leased',
      jobType: 'work',
      queue: 'q',
      leaseOwner: owner,
      leaseExpiresAt: { inMs: -1_000 },
      attempt: 1,
      maxAttempts: 3,
    });
    const spent = await insertJob(db.pool, {
      state: 'running',
      jobType: 'work',
      queue: 'q',
      leaseOwner: owner,
      leaseExpiresAt: { inMs: -1_000 },
      attempt: 3,
      maxAttempts: 3,
    });
    const live = await insertJob(db.pool, {
      state: 'running',
      jobType: 'work',
      queue: 'other',
      leaseOwner: owner,
      leaseExpiresAt: { inMs: 60_000 },
      attempt: 1,
      maxAttempts: 3,
    });
    const calls = new Invocations();
    await rescuer(calls);

    const done = await rowInState(db, retry, 'succeeded');
    expect(done.attempt).toBe(2);
    expect(done.errors.map((e) => e.kind)).toEqual(['lease_expired']);
    const dead = await rowInState(db, spent, 'dead_lettered');
    expect(dead).toMatchObject({ dead_letter_reason: 'attempts_exhausted', attempt: 3 });
    expect(dead.errors.map((e) => e.kind)).toEqual(['lease_expired']);
    // A lease that has not expired, of an owner with no presence row, is left alone.
    expect(await row(db, live)).toMatchObject({ state: 'running', lease_owner: owner });
    expect(calls.of(retry)).toBe(1);
    expect(calls.of(spent)).toBe(0);
  });
});
