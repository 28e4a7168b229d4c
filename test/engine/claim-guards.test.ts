// When a worker must not start jobs: while its presence session is lost it claims
// nothing, because any reaper may take a lease whose owner holds no lock (fast reclaim)
// and the job would run twice (the lock's re-acquisition is held up by locking the
// worker's row, so "lost, not yet back" lasts as long as we like). Before the lock is first
// held, a worker with a generated id claims (no row of it exists that a sweep could mark
// gone) and one with a configured id waits. And a claim answered past the heartbeat deadline
// gives its jobs back unstarted.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { type EngineOptions, Invocations, rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();

/** The presence connection exists and waits on a lock: it has connected but holds nothing yet. */
const presenceWaiting = async () =>
  (
    await db.query(
      `SELECT 1 FROM pg_stat_activity WHERE application_name = 'baton-presence'
        AND datname = current_database() AND wait_event_type = 'Lock'`,
    )
  ).rowCount === 1;

describe('claim guards', () => {
  const engines = useEngines(db);

  /**
   * Enqueues one job, holds every insert into baton.workers (so the presence's first
   * acquisition) and starts a worker without awaiting start(); returns once its presence
   * connection waits. `release` lets the insert through; `end` (in the test's finally) ends
   * the hold in any case, before the engine is stopped.
   */
  async function startWithPresenceHeld(options: EngineOptions) {
    const calls = new Invocations();
    const { job } = await engines.producer().enqueue({ jobType: 'work', queue: 'q' });
    const blocker = new pg.Client({ connectionString: db.url });
    await blocker.connect();
    const end = async () => {
      await blocker.query('ROLLBACK').catch(() => undefined);
      await blocker.end();
    };
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE baton.workers IN SHARE MODE');
      const observed = engines.observe({
        queues: { q: 1 },
        pollIntervalMs: 600_000,
        handlers: { work: (ctx) => calls.record(ctx) },
        ...options,
      });
      const started = observed.baton.start();
      // The test awaits it only after release(). Until then (and for good if the test fails first,
      // when afterEach's stop() makes it reject SHUTTING_DOWN) a rejection must not go unhandled.
      started.catch(() => undefined);
      await waitFor(presenceWaiting, { message: 'the presence connection to wait for the workers table' });
      return { ...observed, job, calls, started, release: () => blocker.query('COMMIT'), end };
    } catch (err) {
      await end();
      throw err;
    }
  }

  it('claims nothing while the presence lock is lost, and claims at once when it is back', async () => {
    const calls = new Invocations();
    const {
      baton: worker,
      claimsSent,
      claimsInFlight,
    } = await engines.startObserved({
      queues: { q: 1 },
      // Only wake-ups start claims here: the poll is out of the way.
      pollIntervalMs: 600_000,
      handlers: { work: (ctx) => calls.record(ctx) },
    });
    const blocker = new pg.Client({ connectionString: db.url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM baton.workers WHERE id = $1 FOR UPDATE', [worker.config.workerId]);

      const killed = await db.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE application_name = 'baton-presence' AND datname = current_database()`,
      );
      expect(killed.rowCount).toBe(1);
      // The new presence session exists and waits on the row: the old one was seen lost.
      await waitFor(
        async () =>
          (
            await db.query(
              `SELECT 1 FROM pg_stat_activity WHERE application_name = 'baton-presence'
                AND datname = current_database() AND wait_event_type = 'Lock'`,
            )
          ).rowCount === 1,
        { message: 'the presence connection to be back and waiting for the worker row' },
      );
      await waitFor(() => claimsInFlight() === 0, { message: 'no claim in flight' });
      expect(worker.stats().presenceHeld).toBe(false);

      // The enqueue wakes the local dispatcher synchronously after its insert; so does wake().
      const sentBefore = claimsSent();
      const { job } = await worker.enqueue({ jobType: 'work', queue: 'q' });
      await worker.wake('q');
      expect(claimsSent()).toBe(sentBefore);
      expect((await rowInState(db, job.id, 'pending')).attempt).toBe(0);

      await blocker.query('COMMIT');
      const done = await rowInState(db, job.id, 'succeeded');
      expect(done.attempt).toBe(1);
      expect(calls.of(job.id)).toBe(1);
      expect(claimsSent()).toBeGreaterThan(sentBefore);
      expect(worker.stats().presenceHeld).toBe(true);
      const me = (await worker.admin.workers()).find((w) => w.id === worker.config.workerId);
      expect(me?.alive).toBe(true);
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      await blocker.end();
    }
  });

  it('a worker with a generated id claims while its presence lock is still being taken', async () => {
    const held = await startWithPresenceHeld({});
    try {
      const { baton: worker, job, calls } = held;
      expect(worker.config.workerIdGenerated).toBe(true);
      // Run and written while the lock is still not held.
      expect((await rowInState(db, job.id, 'succeeded')).attempt).toBe(1);
      expect(calls.of(job.id)).toBe(1);
      expect(await presenceWaiting()).toBe(true);
      expect(worker.stats().presenceHeld).toBe(false);

      await held.release();
      await held.started;
      expect(worker.stats().presenceHeld).toBe(true);
    } finally {
      await held.end();
    }
  });

  it('a worker with a configured id claims nothing until its presence lock is first held', async () => {
    // The claim loops start before the presence connection opens: a claim they were allowed to
    // send would have been counted by the time that connection waits.
    const held = await startWithPresenceHeld({ workerId: 'configured-worker' });
    try {
      const { baton: worker, job, calls, claimsSent } = held;
      expect(worker.config.workerIdGenerated).toBe(false);
      await worker.wake('q');
      expect(claimsSent()).toBe(0);
      expect((await rowInState(db, job.id, 'pending')).attempt).toBe(0);

      await held.release();
      await held.started;
      expect((await rowInState(db, job.id, 'succeeded')).attempt).toBe(1);
      expect(calls.of(job.id)).toBe(1);
      expect(claimsSent()).toBeGreaterThan(0);
    } finally {
      await held.end();
    }
  });

  it('a claim answered past the heartbeat deadline gives its jobs back unstarted; they run once, later', async () => {
    const calls = new Invocations();
    // The worker's own clock, moved by the test: the starvation lasts as long as it says.
    let skew = 0;
    const clock = { now: () => performance.now() + skew };
    const released: string[] = [];
    const observed = engines.observe({
      queues: { q: 1 },
      leaseMs: 2_000, // heartbeat deadline 1,600 ms
      pollIntervalMs: 100,
      clock,
      handlers: { work: (ctx) => calls.record(ctx) },
    });
    const { baton: worker, claimsInFlight, pool } = observed;
    worker.events.on('released', (e) => released.push(e.reason));
    await worker.start();
    await waitFor(() => claimsInFlight() === 0, { message: 'no claim in flight' });
    // Every connection of the worker's pool is busy: its next claim waits for one.
    const held = await Promise.all(Array.from({ length: pool.options.max }, () => pool.connect()));
    let job: { id: string };
    try {
      ({ job } = await engines.producer().enqueue({ jobType: 'work', queue: 'q' }));
      await waitFor(() => claimsInFlight() === 1, { message: 'the claim to be waiting for a connection' });
      // The starvation itself, as the worker measures it: longer than the heartbeat deadline.
      skew += 1_800;
    } finally {
      for (const c of held) c.release();
    }
    const done = await rowInState(db, job.id, 'succeeded');
    // The late claim spent an attempt and refunded it; the claim that ran the job spent one.
    expect(done.attempt).toBe(1);
    expect(calls.of(job.id)).toBe(1);
    expect(done.errors).toEqual([]);
    expect(released).toEqual(['late']);
  });
});
