// Queue pause is fleet-wide because it lives in the claim statement: a worker in another
// Baton instance on the same database (its own pool) claims nothing from a paused queue,
// even when woken by the enqueue's NOTIFY, and picks the job up as soon as the queue is
// resumed. Pausing an unknown queue is refused; pause and resume are idempotent.

import { beforeEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { row, rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();
const NO_POLL = 60_000;

describe('queue pause', () => {
  const engines = useEngines(db);
  beforeEach(async () => {
    await db.query('DELETE FROM baton.paused_queues');
  });

  it("another instance's worker claims nothing from a paused queue, and claims the job once it is resumed", async () => {
    const ran: string[] = [];
    const worker = await engines.startObserved({
      queues: { pq: 2 },
      pollIntervalMs: NO_POLL,
      handlers: { work: (ctx) => void ran.push(ctx.job.id) },
    });
    const operator = engines.producer();
    await waitFor(() => worker.claimsInFlight() === 0, { message: 'the worker to be idle' });

    // Known through the worker's presence row (it serves pq), though no job exists yet.
    const paused = await operator.admin.pauseQueue('pq');
    expect(paused).toMatchObject({ queue: 'pq', paused: true });
    expect(paused.pausedAt).toBeInstanceOf(Date);

    const sent = worker.claimsSent();
    const { job } = await operator.enqueue({ jobType: 'work', queue: 'pq' });
    // The enqueue's NOTIFY wakes the worker: it claims, and the claim statement returns nothing.
    await waitFor(() => worker.claimsSent() > sent && worker.claimsInFlight() === 0, {
      message: 'the woken worker to finish a claim on the paused queue',
    });
    expect(await row(db, job.id)).toMatchObject({ state: 'pending', attempt: 0, lease_token: null });
    expect(ran).toEqual([]);
    // A third instance polling every 20 ms finds the job due at each poll, and claims nothing either.
    const third = await engines.startObserved({
      queues: { pq: 1 },
      pollIntervalMs: 20,
      handlers: { work: (ctx) => void ran.push(ctx.job.id) },
    });
    await waitFor(() => third.claimsSent() >= 5 && third.claimsInFlight() === 0, { message: 'the polling worker to claim 5 times' });
    expect(third.baton.stats().claimed).toBe(0);
    expect(await row(db, job.id)).toMatchObject({ state: 'pending', attempt: 0 });

    expect(await operator.admin.resumeQueue('pq')).toEqual({ queue: 'pq', paused: false, pausedAt: null });
    await rowInState(db, job.id, 'succeeded');
    expect(ran).toEqual([job.id]);
    expect(third.baton.stats().claimed + worker.baton.stats().claimed).toBe(1);
  });

  it('pause and resume are idempotent, show in queues() and refuse a queue nobody knows', async () => {
    const admin = engines.producer().admin;
    await expect(admin.pauseQueue('never-seen')).rejects.toMatchObject({ code: 'QUEUE_NOT_FOUND' });
    await expect(admin.resumeQueue('never-seen')).rejects.toMatchObject({ code: 'QUEUE_NOT_FOUND' });
    expect((await db.query(`SELECT count(*)::int AS n FROM baton.paused_queues WHERE queue = 'never-seen'`)).rows[0].n).toBe(0);

    const producer = engines.producer();
    await producer.enqueue({ jobType: 'x', queue: 'known' });
    const first = await admin.pauseQueue('known');
    const again = await admin.pauseQueue('known');
    expect(again.pausedAt).toEqual(first.pausedAt);
    expect(await admin.pausedQueues()).toEqual([{ queue: 'known', pausedAt: first.pausedAt }]);
    const queues = await admin.queues();
    expect(queues.find((q) => q.queue === 'known')).toMatchObject({ paused: true, pausedAt: first.pausedAt });

    // A paused queue whose jobs are all gone is still listed (and can still be resumed).
    await db.query(`DELETE FROM baton.jobs WHERE queue = 'known'`);
    expect((await admin.queues()).map((q) => q.queue)).toEqual(['known']);
    expect((await admin.stats()).queues).toEqual([
      { queue: 'known', paused: true, pausedAt: first.pausedAt, counts: expect.objectContaining({ pending: 0 }), scheduled: 0 },
    ]);
    expect((await admin.resumeQueue('known')).paused).toBe(false);
    // Resumed with no job left, nothing knows the queue any more.
    await expect(admin.resumeQueue('known')).rejects.toMatchObject({ code: 'QUEUE_NOT_FOUND' });
    await producer.enqueue({ jobType: 'x', queue: 'known' });
    expect(await admin.resumeQueue('known')).toEqual({ queue: 'known', paused: false, pausedAt: null });
    expect(await admin.pausedQueues()).toEqual([]);
  });
});
