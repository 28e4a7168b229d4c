// Fencing end to end: a slow worker's lease expires, another engine's reaper
// reclaims the job and a second worker completes it under a newer token. The slow
// worker's late outcome must change nothing, and once its heartbeat finds the
// lease gone its handler's signal is aborted and checkLease() throws.

import { describe, expect, it } from 'vitest';
import { type JobContext, LeaseLostError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { nextEvent, Signal, waitFor, withTimeout } from '../helpers/wait.ts';
import { type JobRowView, row, rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();

/** Pushes the lease of job `id` under `token` into the past (no-op once the token changed). */
const expireLease = (id: string, token: string) =>
  db.query(
    `UPDATE baton.jobs SET lease_expires_at = now() - interval '1 second'
      WHERE id = $1 AND lease_token = $2 AND state IN ('leased', 'running')`,
    [id, token],
  );

describe.each([true, false])('fencing (claimIntoRunning=%s)', (claimIntoRunning) => {
  const engines = useEngines(db, () => ({ claimIntoRunning }));

  /** Engine B: reaps fast and completes 'slow' jobs at once, writing {by:'B'}. */
  const startRescuer = () => engines.start({ queues: { q: 1 }, reaperIntervalMs: 50, handlers: { slow: () => ({ by: 'B' }) } });

  it.each(['returns', 'throws'] as const)(
    'a stale worker whose handler %s after the job was reclaimed and completed writes nothing',
    async (outcome) => {
      // No heartbeat and no reaper within the test on A: its lease changes only by our hand.
      const entered = new Signal<JobContext>();
      const gate = engines.gate();
      const a = await engines.start({
        queues: { q: 1 },
        leaseMs: 60_000,
        heartbeatMs: 30_000,
        reaper: false,
        pollIntervalMs: 60_000,
        handlers: {
          slow: async (ctx) => {
            entered.emit(ctx);
            await gate.promise;
            if (outcome === 'throws') throw new Error('late failure');
            return { by: 'A' };
          },
        },
      });
      const { job } = await a.enqueue({ jobType: 'slow', queue: 'q', maxAttempts: 5 });
      const ctxA = await entered.next({ message: 'worker A to start the job' });
      expect(ctxA.job.id).toBe(job.id);

      await expireLease(job.id, ctxA.token);
      const b = await startRescuer();
      const done = await rowInState(db, job.id, 'succeeded');
      expect(BigInt(done.lease_token!)).toBeGreaterThan(BigInt(ctxA.token));
      expect(done.result).toEqual({ by: 'B' });
      expect(done.attempt).toBe(2);
      expect(done.errors).toHaveLength(1);
      expect(done.errors[0]).toMatchObject({ kind: 'lease_expired', token: ctxA.token, attempt: 1 });

      const fenced = nextEvent(a.events, 'fenced', { message: "A's stale outcome to be fenced" });
      gate.resolve();
      const [info] = (await fenced) as [{ kind: string; count: number }];
      expect(info).toEqual({ kind: outcome === 'returns' ? 'complete' : 'fail', count: 1 });

      // The row is exactly what B wrote.
      const after = await row(db, job.id);
      expect(after).toEqual(done);
      expect(a.stats()).toMatchObject({ fencedWrites: 1, succeeded: 0, retried: 0, deadLettered: 0 });
      expect(b.stats()).toMatchObject({ succeeded: 1, fencedWrites: 0 });
    },
  );

  it("a heartbeat that finds the lease gone aborts the stale handler's signal and its outcome is discarded", async () => {
    const entered = new Signal<JobContext>();
    const aborted = new Signal<unknown>();
    const gate = engines.gate();
    const a = await engines.start({
      queues: { q: 1 },
      leaseMs: 3_000,
      heartbeatMs: 200,
      reaper: false,
      pollIntervalMs: 60_000,
      handlers: {
        slow: async (ctx) => {
          ctx.signal.addEventListener('abort', () => aborted.emit(ctx.signal.reason));
          entered.emit(ctx);
          await gate.promise; // ignores the signal on purpose: a slow, oblivious handler
          return { by: 'A' };
        },
      },
    });
    const lost = nextEvent(a.events, 'leaseLost', { timeoutMs: 15_000, message: 'A to notice its lease is lost' });
    // Awaited only after the reclaim below: its timeout must not reject unobserved meanwhile
    // (nor, after an earlier failure, during a later test). `await lost` still throws it.
    lost.catch(() => undefined);
    const { job } = await a.enqueue({ jobType: 'slow', queue: 'q' });
    const ctxA = await entered.next({ message: 'worker A to start the job' });
    expect(ctxA.signal.aborted).toBe(false);
    expect(() => ctxA.checkLease()).not.toThrow();

    const b = await startRescuer();
    // A's heartbeat may renew the lease between our expiry and B's reaper: expire until B has it.
    const reclaimed = await waitFor(
      async () => {
        await expireLease(job.id, ctxA.token);
        const r = await row(db, job.id);
        return r.lease_token !== ctxA.token ? r : null;
      },
      { timeoutMs: 10_000, intervalMs: 25, message: 'B to reclaim the job under a new token' },
    );
    expect(BigInt(reclaimed.lease_token!)).toBeGreaterThan(BigInt(ctxA.token));

    const [lostInfo] = (await lost) as [{ job: { id: string } }];
    expect(lostInfo.job.id).toBe(job.id);
    const reason = await aborted.next({ message: "A's signal abort event" });
    expect(ctxA.signal.aborted).toBe(true);
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect(() => ctxA.checkLease()).toThrow(LeaseLostError);
    expect(a.stats()).toMatchObject({ leasesLost: 1, fencedWrites: 1 });

    const done: JobRowView = await rowInState(db, job.id, 'succeeded');
    expect(done.result).toEqual({ by: 'B' });

    // The oblivious handler finally returns: nothing is written for it.
    gate.resolve();
    await waitFor(() => a.stats().slots.q!.inFlight === 0, { message: "A's slot to free" });
    await withTimeout(a.stop(), 10_000, 'A to stop');
    expect(await row(db, job.id)).toEqual(done);
    expect(a.stats()).toMatchObject({ succeeded: 0, retried: 0, deadLettered: 0, leasesLost: 1, fencedWrites: 1 });
    expect(b.stats()).toMatchObject({ succeeded: 1 });
  });

  it('a worker that reclaims its own stale job aborts the stale handler and fences its late outcome', async () => {
    const entered = new Signal<JobContext>();
    const gate = engines.gate();
    // Its own reaper reclaims the job and, having a free slot, it claims the job again itself.
    const a = await engines.start({
      queues: { q: 2 },
      leaseMs: 60_000,
      heartbeatMs: 30_000,
      reaperIntervalMs: 50,
      pollIntervalMs: 60_000,
      handlers: {
        slow: async (ctx) => {
          entered.emit(ctx);
          if (ctx.job.attempt > 1) return { attempt: ctx.job.attempt };
          await gate.promise; // the first run is slow and oblivious
          return { attempt: ctx.job.attempt };
        },
      },
    });
    const { job } = await a.enqueue({ jobType: 'slow', queue: 'q' });
    const first = await entered.next({ message: 'the first run to start' });
    await expireLease(job.id, first.token);
    const second = await entered.next({ message: 'the second run (same worker) to start' });
    expect(BigInt(second.token)).toBeGreaterThan(BigInt(first.token));
    const done = await rowInState(db, job.id, 'succeeded');
    expect(done.result).toEqual({ attempt: 2 });

    // The first run's lease is provably gone (a newer token exists): its signal must say so.
    expect(first.signal.aborted).toBe(true);
    expect(() => first.checkLease()).toThrow(LeaseLostError);
    expect(a.stats().leasesLost).toBe(1);

    gate.resolve();
    await waitFor(() => a.stats().slots.q!.inFlight === 0, { message: 'the first run to return' });
    expect(await row(db, job.id)).toEqual(done);
    expect(a.stats().succeeded).toBe(1);
  });
});
