// Wake-ups end to end. With a 60 s poll, only a NOTIFY can start a job promptly:
// a job from a separate producer (its own pool, no queues) starts in under a
// second, and so does every job of a burst inside one debounce window; after the
// listener's connection is killed the worker reconnects and still starts jobs
// promptly; with dispatch 'poll' nothing LISTENs at all.
// Transactional enqueue: the job and its NOTIFY travel with the caller's COMMIT.

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { Signal, waitFor } from '../helpers/wait.ts';
import { Invocations, row, rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();
const NO_POLL = 60_000;

/** Backends of this database LISTENing (the listener's connection shows its last statement). */
const listeners = () =>
  db.query<{ pid: number; state: string; query: string }>(
    `SELECT pid, state, query FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'baton-listener'`,
  );

describe.each([true, false])('wake-ups (claimIntoRunning=%s)', (claimIntoRunning) => {
  const engines = useEngines(db, () => ({ claimIntoRunning }));

  /** A notify-mode worker whose handler reports when each job starts; idle() waits until no claim is in flight. */
  async function idleWorker() {
    const started = new Signal<{ id: string; at: number }>();
    const { baton: worker, claimsInFlight } = await engines.startObserved({
      queues: { q: 2 },
      pollIntervalMs: NO_POLL,
      handlers: { ping: (ctx) => started.emit({ id: ctx.job.id, at: performance.now() }) },
    });
    // Once no claim is in flight, only a wake-up can make the worker claim (the poll is 60 s away).
    const idle = () => waitFor(() => claimsInFlight() === 0, { message: 'the worker to have no claim in flight' });
    await idle();
    return { worker, started, idle };
  }

  /** Enqueues from the producer into the idle worker; returns ms from enqueue's return to the handler's start. */
  async function startLatency(
    producer: ReturnType<typeof engines.producer>,
    { started, idle }: { started: Signal<{ id: string; at: number }>; idle: () => Promise<unknown> },
  ) {
    await idle();
    const { job } = await producer.enqueue({ jobType: 'ping', queue: 'q' });
    const t0 = performance.now();
    const s = await started.next({ timeoutMs: 5_000, message: `job ${job.id} to start` });
    expect(s.id).toBe(job.id);
    await rowInState(db, job.id, 'succeeded');
    return s.at - t0;
  }

  it('a job from a separate producer starts in well under a second with a 60 s poll', async () => {
    const idleW = await idleWorker();
    const producer = engines.producer();
    // Sequential jobs into an idle worker; each must be woken by its NOTIFY.
    for (let i = 0; i < 3; i++) expect(await startLatency(producer, idleW)).toBeLessThan(1_000);
    const { worker } = idleW;
    // Rows commit before the worker reads each write's reply and counts it.
    await waitFor(() => worker.stats().succeeded === 3, { message: 'the worker to count 3 successes' });
    expect(worker.stats().claimed).toBe(3);
  });

  it('jobs enqueued inside an open debounce window start by its trailing NOTIFY, sent after their commits', async () => {
    const { worker, started, idle } = await idleWorker();
    const producer = engines.producer({ notifyDebounceMs: 500 });
    // The first enqueue leads (its NOTIFY rides behind the insert) and opens the window; its
    // claim found one job for two slots, so the worker is not in drain mode afterwards.
    const first = await producer.enqueue({ jobType: 'ping', queue: 'q' });
    expect((await started.next({ timeoutMs: 5_000, message: 'the leading job to start' })).id).toBe(first.job.id);
    await idle();
    // Inside the window: no NOTIFY of their own; only the trailing one (or a 60 s poll) can wake the worker.
    const burst: string[] = [];
    for (let i = 0; i < 5; i++) burst.push((await producer.enqueue({ jobType: 'ping', queue: 'q' })).job.id);
    const ids = new Set<string>();
    while (ids.size < burst.length)
      ids.add((await started.next({ timeoutMs: 5_000, message: `job ${ids.size + 1} of the burst to start` })).id);
    expect(ids).toEqual(new Set(burst));
    for (const id of burst) await rowInState(db, id, 'succeeded');
    await waitFor(() => worker.stats().succeeded === 6, { message: 'the worker to count 6 successes' });
    expect(worker.stats().claimed).toBe(6);
  });

  it('after its listener connection is killed the worker reconnects and still starts jobs promptly', async () => {
    const idleW = await idleWorker();
    const { worker } = idleW;
    const producer = engines.producer();
    const before = await listeners();
    expect(before.rowCount).toBe(1);
    const oldPid = before.rows[0]!.pid;

    await db.query(`SELECT pg_terminate_backend($1)`, [oldPid]);
    // The new listener is in place once its backend has run LISTEN (it re-subscribes, then reports connected).
    await waitFor(
      async () => {
        const now = await listeners();
        return now.rows.some((r) => r.pid !== oldPid && r.state === 'idle' && /^LISTEN /i.test(r.query));
      },
      { timeoutMs: 15_000, message: 'a new listener backend that has run LISTEN' },
    );
    expect((await listeners()).rows.map((r) => r.pid)).not.toContain(oldPid);

    // The reconnect itself polls once; startLatency waits for that claim to finish first.
    expect(await startLatency(producer, idleW)).toBeLessThan(2_000);
    await waitFor(() => worker.stats().succeeded === 1, { message: 'the worker to count the success' });
  });

  it("with dispatch 'poll' nothing LISTENs and jobs still run by polling", async () => {
    const calls = new Invocations();
    const worker = await engines.start({
      queues: { q: 2 },
      dispatch: 'poll',
      pollIntervalMs: 100,
      handlers: { ping: (ctx) => calls.record(ctx) },
    });
    const producer = engines.producer({ dispatch: 'poll' });
    const { job } = await producer.enqueue({ jobType: 'ping', queue: 'q' });
    await rowInState(db, job.id, 'succeeded');
    expect(calls.of(job.id)).toBe(1);

    expect((await listeners()).rowCount).toBe(0);
    const listening = await db.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'`);
    expect(listening.rowCount).toBe(0);
    // The worker's own sessions are there (so the checks above looked at the right database).
    const presence = await db.query(
      `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'baton-presence'`,
    );
    expect(presence.rowCount).toBe(1);
    expect(worker.stats().claimed).toBe(1);
  });

  describe('transactional enqueue', () => {
    it('a job enqueued in the caller transaction is invisible until COMMIT, then woken by the NOTIFY', async () => {
      const { worker, started, idle } = await idleWorker();
      const producer = engines.producer();
      const client = await db.pool.connect();
      try {
        await client.query('BEGIN');
        const { job, created } = await producer.enqueue({ jobType: 'ping', queue: 'q' }, { client });
        expect(created).toBe(true);
        expect((await db.query(`SELECT 1 FROM baton.jobs WHERE id = $1`, [job.id])).rowCount).toBe(0);
        // The transaction is still the caller's: Baton did not commit it.
        expect((await client.query(`SELECT now() = statement_timestamp() AS fresh`)).rows[0].fresh).toBe(false);
        expect(worker.stats().claimed).toBe(0);

        await idle();
        await client.query('COMMIT');
        const t0 = performance.now();
        const s = await started.next({ timeoutMs: 5_000, message: 'the committed job to start' });
        expect(s.id).toBe(job.id);
        // 60 s poll: only the NOTIFY sent inside the transaction can have woken the worker.
        expect(s.at - t0).toBeLessThan(1_000);
        expect((await rowInState(db, job.id, 'succeeded')).attempt).toBe(1);
      } finally {
        client.release();
      }
    });

    it('ROLLBACK leaves no job and runs nothing', async () => {
      const { worker, started } = await idleWorker();
      const producer = engines.producer();
      const client = await db.pool.connect();
      let rolledBack: string;
      try {
        await client.query('BEGIN');
        rolledBack = (await producer.enqueue({ jobType: 'ping', queue: 'q' }, { client })).job.id;
        await client.query('ROLLBACK');
      } finally {
        client.release();
      }
      expect((await db.query(`SELECT 1 FROM baton.jobs WHERE id = $1`, [rolledBack])).rowCount).toBe(0);

      // A committed job afterwards runs; it is the only thing that ever ran.
      const { job } = await producer.enqueue({ jobType: 'ping', queue: 'q' });
      expect((await started.next({ message: 'the committed job to start' })).id).toBe(job.id);
      expect((await rowInState(db, job.id, 'succeeded')).attempt).toBe(1);
      expect(started.pending).toBe(0);
      expect((await db.query(`SELECT count(*)::int AS n FROM baton.jobs`)).rows[0].n).toBe(1);
      await waitFor(() => worker.stats().succeeded === 1, { message: 'the worker to count the success' });
      expect(worker.stats().claimed).toBe(1);
      expect(await row(db, job.id)).toMatchObject({ state: 'succeeded' });
    });
  });
});
