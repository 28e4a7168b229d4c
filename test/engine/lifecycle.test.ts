// Lifecycle end to end: a drain-stop lets in-flight jobs finish and claims
// nothing new; jobs claimed but not yet started when stop begins are released
// with their attempt refunded; a handler aborted by the drain deadline gives its job back
// with the attempt refunded (it did not fail), and so does one that ignores its signal;
// start() and stop() are idempotent.

import { describe, expect, it } from 'vitest';
import { type Baton, BatonError, type JobContext } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { deferred, Signal, waitFor, withTimeout } from '../helpers/wait.ts';
import { Invocations, row, rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();

const countBackends = async (applicationName: string) =>
  (
    await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
      [applicationName],
    )
  ).rows[0]!.n;

describe.each([true, false])('lifecycle (claimIntoRunning=%s)', (claimIntoRunning) => {
  const engines = useEngines(db, () => ({ claimIntoRunning }));

  it('stop({ drainMs }) lets in-flight jobs finish and claims nothing after it begins', async () => {
    const entered = new Signal<JobContext>();
    const gate = engines.gate();
    const calls = new Invocations();
    const worker = await engines.start({
      queues: { q: 2 },
      handlers: {
        work: async (ctx) => {
          calls.record(ctx);
          entered.emit(ctx);
          await gate.promise;
          return { finished: ctx.job.id };
        },
      },
    });
    const [a, b, c] = await worker.enqueueMany([1, 2, 3].map((n) => ({ jobType: 'work', queue: 'q', payload: { n } })));
    const first = await entered.next({ message: 'a first job to start' });
    const second = await entered.next({ message: 'a second job to start' });
    expect(new Set([first.job.id, second.job.id])).toEqual(new Set([a!.job.id, b!.job.id]));

    const stopping = worker.stop({ drainMs: 10_000 });
    // Enqueued after stop began, by a producer whose NOTIFY reaches nobody that may claim.
    const late = await engines.producer().enqueue({ jobType: 'work', queue: 'q' });
    gate.resolve();
    await withTimeout(stopping, 15_000, 'the drain-stop to finish');

    for (const j of [a!, b!]) {
      const r = await row(db, j.job.id);
      expect(r).toMatchObject({ state: 'succeeded', attempt: 1, result: { finished: j.job.id } });
    }
    // Freed slots did not claim again (no drain-mode re-claim after stop).
    for (const j of [c!, late]) expect(await row(db, j.job.id)).toMatchObject({ state: 'pending', attempt: 0, lease_token: null });
    expect(calls.total).toBe(2);
    expect(worker.stats()).toMatchObject({ claimed: 2, succeeded: 2 });
    expect(await countBackends('baton-presence')).toBe(0);
    expect(await countBackends('baton-listener')).toBe(0);
  });

  it('jobs claimed when stop begins are released unstarted with their attempt refunded', async () => {
    const calls = new Invocations();
    const worker = await engines.start({ queues: { q: 4 }, handlers: { work: (ctx) => calls.record(ctx) } });
    // stop() from the 'claimed' listener runs synchronously inside the claim: the engine must
    // give the just-claimed jobs back instead of starting them.
    const claimed = deferred();
    worker.events.once('claimed', () => {
      void worker.stop();
      claimed.resolve();
    });
    // One insert, so one wake-up and one claim of all three.
    const ids = (await worker.enqueueMany([1, 2, 3].map(() => ({ jobType: 'work', queue: 'q' })))).map((r) => r.job.id);
    await withTimeout(claimed.promise, 10_000, 'a claim');
    await withTimeout(worker.stop(), 10_000, 'stop to finish'); // the same stop, already under way

    expect(worker.stats().claimed).toBe(3);
    for (const id of ids) {
      expect(await row(db, id)).toMatchObject({
        state: 'pending',
        attempt: 0,
        lease_owner: null,
        lease_expires_at: null,
        started_at: null,
      });
    }
    expect(calls.total).toBe(0);
    // Released, not lost: another worker runs each of them once, as its first attempt.
    await engines.start({ queues: { q: 4 }, handlers: { work: (ctx) => calls.record(ctx) } });
    for (const id of ids) expect((await rowInState(db, id, 'succeeded')).attempt).toBe(1);
    expect(calls.duplicates()).toEqual([]);
    expect(calls.total).toBe(3);
  });

  it('a handler aborted by the drain deadline gives its job back with the attempt refunded, even its last one', async () => {
    const entered = new Signal<JobContext>();
    const worker = await engines.start({
      queues: { q: 2 },
      handlers: {
        // Honours its signal: rejects with the abort reason as soon as it is aborted.
        polite: (ctx) =>
          new Promise((_, reject) => {
            entered.emit(ctx);
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
          }),
      },
    });
    const released: Array<{ queue: string; count: number; reason: string }> = [];
    worker.events.on('released', (e) => released.push(e));
    const last = await worker.enqueue({ jobType: 'polite', queue: 'q', maxAttempts: 1 });
    const spare = await worker.enqueue({ jobType: 'polite', queue: 'q', maxAttempts: 3 });
    await entered.next({ message: 'a first job to start' });
    await entered.next({ message: 'a second job to start' });

    await withTimeout(worker.stop({ drainMs: 100 }), 10_000, 'stop past the drain deadline');
    for (const { job } of [last, spare]) {
      expect(await row(db, job.id)).toMatchObject({
        state: 'pending',
        attempt: 0,
        lease_owner: null,
        lease_expires_at: null,
        dead_letter_reason: null,
        errors: [],
      });
    }
    expect(worker.stats()).toMatchObject({ retried: 0, deadLettered: 0 });
    expect(released).toEqual([
      { queue: 'q', count: 1, reason: 'shutdown' },
      { queue: 'q', count: 1, reason: 'shutdown' },
    ]);
  });

  it('a handler that finishes although the drain deadline aborted it is recorded as it finished', async () => {
    const entered = new Signal<JobContext>();
    const worker = await engines.start({
      queues: { q: 1 },
      handlers: {
        finisher: (ctx) =>
          new Promise((resolve) => {
            entered.emit(ctx);
            ctx.signal.addEventListener('abort', () => resolve({ finished: true }), { once: true });
          }),
      },
    });
    const { job } = await worker.enqueue({ jobType: 'finisher', queue: 'q', maxAttempts: 1 });
    await entered.next({ message: 'the job to start' });
    await withTimeout(worker.stop({ drainMs: 100 }), 10_000, 'stop past the drain deadline');
    expect(await row(db, job.id)).toMatchObject({ state: 'succeeded', attempt: 1, result: { finished: true } });
  });

  it('a handler that ignores its signal past the drain deadline has its lease released, attempt refunded', async () => {
    const entered = new Signal<JobContext>();
    const gate = engines.gate();
    const worker = await engines.start({
      queues: { q: 1 },
      handlers: {
        stubborn: async (ctx) => {
          entered.emit(ctx);
          await gate.promise; // never looks at ctx.signal
          return { late: true };
        },
      },
    });
    const { job } = await worker.enqueue({ jobType: 'stubborn', queue: 'q' });
    const ctx = await entered.next({ message: 'the stubborn job to start' });

    await withTimeout(worker.stop({ drainMs: 100 }), 10_000, 'stop past the drain deadline');
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toBeInstanceOf(BatonError);
    expect((ctx.signal.reason as BatonError).code).toBe('SHUTTING_DOWN');
    // Given back for someone else at once (not at lease expiry), its attempt refunded.
    const released = await row(db, job.id);
    expect(released).toMatchObject({ state: 'pending', attempt: 0, lease_owner: null, lease_expires_at: null });

    // Its late result is never written.
    gate.resolve();
    await waitFor(() => worker.stats().slots.q!.inFlight === 0, { message: 'the stubborn handler to return' });
    expect(await row(db, job.id)).toEqual(released);
    expect(worker.stats().succeeded).toBe(0);
  });

  it.each([
    ['generated', {}],
    ['configured', { workerId: 'warm-worker' }],
  ])('start() has a pool connection per queue plus one for outcome writes (%s worker id)', async (_, id) => {
    // No jobs and no reaper: without the warm-up, the first claim of each queue is all that
    // would have asked for a connection by now (a generated id sends it as start() begins and
    // the warm-up adds one; a configured id sends it once the lock is held, as start() resolves,
    // on connections the warm-up opened), so the first outcome write would wait for a connect.
    const { pool } = await engines.startObserved({ queues: { a: 1, b: 1 }, reaper: false, ...id });
    expect(pool.totalCount).toBe(3);
  });

  it('stop() is idempotent and safe without start(); start() after stop() is refused', async () => {
    const never = engines.create({ queues: { q: 1 } });
    const s1 = never.stop();
    const s2 = never.stop({ drainMs: 0 });
    expect(s2).toBe(s1);
    await withTimeout(s1, 10_000, 'stop without start');
    await expect(never.start()).rejects.toMatchObject({ code: 'SHUTTING_DOWN' });

    const used = await engines.start({ queues: { q: 1 } });
    await withTimeout(used.stop(), 10_000, 'first stop');
    await withTimeout(used.stop(), 10_000, 'second stop');
    expect(await countBackends('baton-presence')).toBe(0);
  });

  it('start() twice (also concurrently) starts one set of connections and runs each job once', async () => {
    const calls = new Invocations();
    const worker: Baton = engines.create({ queues: { q: 2 }, handlers: { work: (ctx) => calls.record(ctx) } });
    await Promise.all([worker.start(), worker.start()]);
    await worker.start();
    expect(await countBackends('baton-presence')).toBe(1);
    expect(await countBackends('baton-listener')).toBe(1);

    const results = await worker.enqueueMany([1, 2, 3].map(() => ({ jobType: 'work', queue: 'q' })));
    for (const r of results) await rowInState(db, r.job.id, 'succeeded');
    expect(calls.total).toBe(3);
    expect(calls.duplicates()).toEqual([]);
    expect((await worker.admin.workers()).length).toBe(1);
  });

  it('stop() called while start() is still connecting leaves nothing running', async () => {
    const worker = engines.create({ queues: { q: 1 } });
    const starting = worker.start();
    const stopping = worker.stop();
    await expect(starting).rejects.toMatchObject({ code: 'SHUTTING_DOWN' });
    await withTimeout(stopping, 10_000, 'stop during start');

    // Nothing the start created outlives the stop (before the fix the LISTEN session, heartbeat and poll timers did).
    await waitFor(async () => (await countBackends('baton-presence')) + (await countBackends('baton-listener')) === 0, {
      timeoutMs: 5_000,
      message: 'presence and listener sessions to end',
    });
    // Nor does its worker row (the console would list a dead worker for an hour).
    expect((await db.query(`SELECT id FROM baton.workers`)).rows).toEqual([]);
  });
});
