// Conformance of the console's reads and writes on the executor: pause state (known queues
// only, idempotent), run now (pending only), listings sorted and filtered by creation time,
// and by whether the run-at has come, and the stats snapshot (counts, scheduled jobs, paused
// queues, the window's finished jobs and latencies).

import { describe, expect, it } from 'vitest';
import { JOB_SORT_KEYS } from '../../src/types/job-sort.ts';
import { insertJob, insertWorker } from '../helpers/factory.ts';
import { baton, claim, ex, expectBatonError, fresh, row, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();

describe('console', () => {
  it('queuePause/queueResume: known queues only, idempotent; the claim skips a paused queue', async () => {
    const queue = fresh();
    expect(await ex.queuePause({ queue })).toBeNull();
    expect(await ex.queueResume({ queue })).toBeNull();
    const id = await insertJob(db.pool, { queue });
    const at = await ex.queuePause({ queue });
    expect(at).toBeInstanceOf(Date);
    expect(await ex.queuePause({ queue })).toEqual(at);
    expect((await ex.queueListPaused()).filter((p) => p.queue === queue)).toEqual([{ queue, pausedAt: at }]);
    expect(await claim(queue, 10)).toEqual([]);
    expect((await row(id)).state).toBe('pending');
    expect(await ex.queueResume({ queue })).toEqual({ wasPaused: true });
    expect(await ex.queueResume({ queue })).toEqual({ wasPaused: false });
    expect((await claim(queue, 10)).map((j) => j.id)).toEqual([id]);

    // A queue only a live worker serves is known too; a gone worker's is not.
    const served = fresh();
    await insertWorker(db.pool, `w-${served}`, { queues: { [served]: 1 } });
    expect(await ex.queuePause({ queue: served })).toBeInstanceOf(Date);
    const gone = fresh();
    await insertWorker(db.pool, `w-${gone}`, { queues: { [gone]: 1 }, goneSince: new Date() });
    expect(await ex.queuePause({ queue: gone })).toBeNull();
    await ex.queueResume({ queue: served });
  });

  it('jobRunNow: a delayed pending job is due now, an already due one keeps its run_at, others are refused', async () => {
    const queue = fresh();
    const delayed = await insertJob(db.pool, { queue, runAt: { inMs: 3_600_000 } });
    const job = await ex.jobRunNow({ id: delayed });
    expect(job).toMatchObject({ id: delayed, state: 'pending' });
    const r = await row(delayed);
    expect(r.run_at).toEqual(r.updated_at);
    const due = await insertJob(db.pool, { queue, runAt: { inMs: -60_000 } });
    const before = (await row(due)).run_at;
    await ex.jobRunNow({ id: due });
    expect((await row(due)).run_at).toEqual(before);
    for (const state of ['running', 'succeeded', 'cancelled', 'dead_lettered'] as const) {
      const id = await insertJob(db.pool, { queue, state });
      expect(await ex.jobRunNow({ id })).toBeNull();
    }
    expect(await ex.jobRunNow({ id: '999999999' })).toBeNull();
    // Through admin: 409 with the state, 404, and the claim takes it at once.
    const running = await insertJob(db.pool, { queue, state: 'running' });
    expect((await expectBatonError(baton.admin.runNow(running), 'JOB_STATE_CONFLICT')).details).toMatchObject({ state: 'running' });
    await expectBatonError(baton.admin.runNow('999999999'), 'JOB_NOT_FOUND');
    expect((await claim(queue, 10)).map((j) => j.id).sort()).toEqual([delayed, due].sort());
  });

  it('jobList sorted by every key both ways, and filtered by creation time; the count follows the filter', async () => {
    const queue = fresh();
    // Created in id order, as jobs are: createdAt is the id order.
    const ids = [
      await insertJob(db.pool, { queue, jobType: 'b', createdAt: '2030-01-01T00:00:00Z', priority: 3 }),
      await insertJob(db.pool, { queue, jobType: 'a', createdAt: '2030-01-02T00:00:00Z', priority: 2 }),
      await insertJob(db.pool, { queue, jobType: 'c', createdAt: '2030-01-03T00:00:00Z', priority: 1 }),
    ];
    const list = async (p: Parameters<typeof ex.jobList>[0]) => (await ex.jobList(p)).map((j) => j.id);
    for (const sort of JOB_SORT_KEYS) {
      const asc = await list({ queue, sort, order: 'asc', limit: 10, offset: 0 });
      const desc = await list({ queue, sort, order: 'desc', limit: 10, offset: 0 });
      expect(asc.length, sort).toBe(3);
      if (['id', 'createdAt', 'jobType', 'priority'].includes(sort)) expect(desc, sort).toEqual([...asc].reverse());
    }
    expect(await list({ queue, sort: 'createdAt', order: 'asc', limit: 10, offset: 0 })).toEqual(ids);
    expect(await list({ queue, sort: 'id', order: 'asc', limit: 2, offset: 1 })).toEqual([ids[1], ids[2]]);
    expect(await list({ queue, sort: 'jobType', order: 'asc', limit: 10, offset: 0 })).toEqual([ids[1], ids[0], ids[2]]);
    expect(await list({ queue, sort: 'priority', order: 'desc', limit: 2, offset: 1 })).toEqual([ids[1], ids[2]]);
    const window = { queue, createdAfter: new Date('2030-01-02T00:00:00Z'), createdBefore: new Date('2030-01-03T00:00:00Z') };
    expect(await list({ ...window, limit: 10, offset: 0 })).toEqual([ids[1]]);
    expect(await list({ ...window, sort: 'jobType', order: 'asc', limit: 10, offset: 0 })).toEqual([ids[1]]);
    expect(await ex.jobCountCapped({ ...window, cap: 100 })).toBe(1);
    expect(await ex.jobCountCapped({ queue, createdAfter: new Date('2030-01-02T00:00:00Z'), cap: 100 })).toBe(2);
    expect(await ex.jobCountCapped({ queue, createdAfter: new Date('2031-01-01T00:00:00Z'), cap: 100 })).toBe(0);
    expect(await list({ queue, createdBefore: new Date('2030-01-02T00:00:00Z'), limit: 10, offset: 0 })).toEqual([ids[0]]);
    expect(await list({ queue, createdBefore: new Date('2000-01-01T00:00:00Z'), limit: 10, offset: 0 })).toEqual([]);
    const page = await baton.admin.listJobs({ queue, sort: 'createdAt', order: 'desc', createdAfter: new Date('2029-12-31T00:00:00Z') });
    expect(page.jobs.map((j) => j.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect(page.total).toBe(3);
    expect(page.windowed).toBe(false);
    expect((await baton.admin.listJobs({ queue, sort: 'jobType' })).windowed).toBe(true);
    await expectBatonError(baton.admin.listJobs({ sort: 'payload' as never }), 'INVALID_ARGUMENT');

    // due: whether the run-at has come, by the database's clock; it combines with the others.
    const dueQueue = fresh();
    const due = await insertJob(db.pool, { queue: dueQueue, runAt: { inMs: -1_000 } });
    const later = await insertJob(db.pool, { queue: dueQueue, runAt: { inMs: 3_600_000 } });
    await insertJob(db.pool, { queue: dueQueue, state: 'succeeded' });
    expect(await list({ queue: dueQueue, state: 'pending', due: false, limit: 10, offset: 0 })).toEqual([later]);
    expect(await list({ queue: dueQueue, state: 'pending', due: true, limit: 10, offset: 0 })).toEqual([due]);
    expect(await ex.jobCountCapped({ queue: dueQueue, state: 'pending', due: false, cap: 100 })).toBe(1);
    expect(await ex.jobCountCapped({ queue: dueQueue, due: true, cap: 100 })).toBe(2);
    const scheduledPage = await baton.admin.listJobs({ queue: dueQueue, state: 'pending', due: false });
    expect([scheduledPage.jobs.map((j) => j.id), scheduledPage.total]).toEqual([[later], 1]);
    await expectBatonError(baton.admin.listJobs({ createdAfter: new Date('nope') }), 'INVALID_ARGUMENT');
  });

  it('statsSnapshot: counts by queue and state, paused queues, the window of finished jobs and start latencies', async () => {
    await db.query('DELETE FROM baton.jobs');
    const queue = fresh();
    await insertJob(db.pool, { queue, state: 'pending' });
    await insertJob(db.pool, { queue, state: 'pending', runAt: { inMs: 3_600_000 } });
    await insertJob(db.pool, { queue, state: 'running' });
    // Due at -10 s, started at -8 s: 2 s of start latency; and one at 4 s.
    await insertJob(db.pool, {
      queue,
      state: 'succeeded',
      runAt: { inMs: -10_000 },
      startedAt: { inMs: -8_000 },
      finishedAt: { inMs: -1_000 },
    });
    await insertJob(db.pool, {
      queue,
      state: 'succeeded',
      runAt: { inMs: -10_000 },
      startedAt: { inMs: -6_000 },
      finishedAt: { inMs: -1_000 },
    });
    await insertJob(db.pool, { queue, state: 'succeeded', finishedAt: { inMs: -600_000 }, startedAt: { inMs: -600_000 } });
    await insertJob(db.pool, { queue, state: 'dead_lettered', finishedAt: { inMs: -2_000 } });
    await insertJob(db.pool, { queue, state: 'cancelled', finishedAt: { inMs: -2_000 } });
    // Finished jobs are counted by the counters the finishing statements keep; rows written
    // by hand, as here, are added to them by hand.
    await db.query(
      `INSERT INTO baton.finished_counts (queue, state, shard, n) VALUES ($1, 'succeeded', 0, 3), ($1, 'dead_lettered', 0, 1), ($1, 'cancelled', 0, 1)`,
      [queue],
    );
    await ex.queuePause({ queue });
    const s = await ex.statsSnapshot({ windowSeconds: 60 });
    expect(s.at).toBeInstanceOf(Date);
    expect(s.counts.filter((c) => c.queue === queue).sort((a, b) => a.state.localeCompare(b.state))).toEqual([
      { queue, state: 'cancelled', n: 1 },
      { queue, state: 'dead_lettered', n: 1 },
      { queue, state: 'pending', n: 2 },
      { queue, state: 'running', n: 1 },
      { queue, state: 'succeeded', n: 3 },
    ]);
    expect(s.paused.map((p) => p.queue)).toContain(queue);
    expect(s.scheduled.filter((x) => x.queue === queue)).toEqual([{ queue, n: 1 }]);
    expect(s).toMatchObject({ succeeded: 2, deadLettered: 1, cancelled: 1 });
    expect(s.latency.count).toBe(2);
    expect(s.latency.p50).toBeCloseTo(3_000, -1);
    expect(s.latency.max).toBeCloseTo(4_000, -1);
    const snap = await baton.admin.stats({ windowSeconds: 3600 });
    expect(snap.window).toMatchObject({ seconds: 3600, succeeded: 3 });
    expect(snap.queues.find((q) => q.queue === queue)).toMatchObject({ paused: true, counts: { succeeded: 3, pending: 2 }, scheduled: 1 });
    await expectBatonError(baton.admin.stats({ windowSeconds: 0 }), 'INVALID_ARGUMENT');
    await ex.queueResume({ queue });
  });
});
