// Conformance of the admin reads and writes (get, list, count, replay, cancel, dead-letter
// replay, counts by queue, workers), through baton.admin and called on the executor directly.

import { describe, expect, it } from 'vitest';
import { insertJob, insertJobs } from '../helpers/factory.ts';
import { baton, claim, expectBatonError, fresh, row, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();

describe('admin', () => {
  it('getJob: unknown id -> JOB_NOT_FOUND, malformed id -> INVALID_ARGUMENT', async () => {
    await expectBatonError(baton.admin.getJob('999999999'), 'JOB_NOT_FOUND');
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999']) await expectBatonError(baton.admin.getJob(bad), 'INVALID_ARGUMENT');
    const id = await insertJob(db.pool, { queue: fresh() });
    expect((await baton.admin.getJob(id)).id).toBe(id);
  });

  it('replay: conflict unless terminal; resets the attempt budget and counts replays', async () => {
    const queue = fresh();
    for (const state of ['pending', 'leased', 'running'] as const) {
      const id = await insertJob(db.pool, { queue, state });
      const before = await row(id);
      const err = await expectBatonError(baton.admin.replay(id), 'JOB_STATE_CONFLICT');
      expect(err.details).toMatchObject({ id, state });
      expect(await row(id)).toEqual(before);
    }
    await expectBatonError(baton.admin.replay('999999999'), 'JOB_NOT_FOUND');

    const dead = await insertJob(db.pool, { queue, state: 'dead_lettered', attempt: 5, maxAttempts: 5, replayCount: 2, errors: [{ attempt: 5 }] });
    const job = await baton.admin.replay(dead);
    expect(job).toMatchObject({ id: dead, state: 'pending', attempt: 0, replayCount: 3 });
    const r = await row(dead);
    expect(r).toMatchObject({ state: 'pending', attempt: 0, replay_count: 3, dead_letter_reason: null, finished_at: null, started_at: null, errors: [{ attempt: 5 }] });
    expect(r.run_at).toEqual(r.updated_at);
    await expectBatonError(baton.admin.replay(dead), 'JOB_STATE_CONFLICT'); // now pending

    for (const state of ['succeeded', 'cancelled'] as const) {
      const id = await insertJob(db.pool, { queue, state, result: state === 'succeeded' ? { ok: 1 } : undefined });
      expect(await baton.admin.replay(id)).toMatchObject({ state: 'pending', replayCount: 1 });
      expect(await row(id)).toMatchObject({ result: null, finished_at: null });
    }
  });

  it('cancel: only pending jobs', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue });
    expect(await baton.admin.cancel(id)).toMatchObject({ id, state: 'cancelled' });
    const r = await row(id);
    expect(r.state).toBe('cancelled');
    expect(r.finished_at).toEqual(r.updated_at);
    await expectBatonError(baton.admin.cancel(id), 'JOB_STATE_CONFLICT');
    for (const state of ['leased', 'running', 'succeeded', 'dead_lettered'] as const) {
      const other = await insertJob(db.pool, { queue, state });
      const before = await row(other);
      await expectBatonError(baton.admin.cancel(other), 'JOB_STATE_CONFLICT');
      expect(await row(other)).toEqual(before);
    }
    await expectBatonError(baton.admin.cancel('999999999'), 'JOB_NOT_FOUND');
    // A cancelled job is never claimed.
    expect(await claim(queue, 10)).toEqual([]);
  });

  it('replayDeadLetters: capped page, oldest first, filtered by queue', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 5, { queue, state: 'dead_lettered', attempt: 3, maxAttempts: 3 });
    const elsewhere = await insertJob(db.pool, { queue: fresh(), state: 'dead_lettered' });
    const page = await baton.admin.replayDeadLetters({ limit: 2, queue });
    expect(page.map((j) => j.id)).toEqual(ids.slice(0, 2));
    expect(page.every((j) => j.state === 'pending' && j.attempt === 0 && j.replayCount === 1)).toBe(true);
    const left = await db.query(`SELECT id::text FROM baton.jobs WHERE queue = $1 AND state = 'dead_lettered' ORDER BY id`, [queue]);
    expect(left.rows.map((r) => r.id)).toEqual(ids.slice(2));
    expect((await row(elsewhere)).state).toBe('dead_lettered');
    for (const limit of [0, 1_001, 2.5]) await expectBatonError(baton.admin.replayDeadLetters({ limit, queue }), 'INVALID_ARGUMENT');
  });

  it('listJobs: filters, paging, newest first, and validation', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 5, (i) => ({ queue, tenantId: i < 3 ? 't-list' : 't-other', jobType: i % 2 ? 'odd' : 'even' }));
    await insertJob(db.pool, { queue, state: 'succeeded', tenantId: 't-list' });

    const all = await baton.admin.listJobs({ queue, state: 'pending' });
    expect(all).toMatchObject({ total: 5, limit: 50, offset: 0 });
    expect(all.jobs.map((j) => j.id)).toEqual([...ids].reverse());

    const p1 = await baton.admin.listJobs({ queue, state: 'pending', limit: 2 });
    const p2 = await baton.admin.listJobs({ queue, state: 'pending', limit: 2, offset: 2 });
    expect([...p1.jobs, ...p2.jobs].map((j) => j.id)).toEqual([ids[4], ids[3], ids[2], ids[1]]);
    expect(p2.total).toBe(5);

    const tenant = await baton.admin.listJobs({ queue, tenantId: 't-list', state: 'pending' });
    expect(tenant.jobs.map((j) => j.id)).toEqual([ids[2], ids[1], ids[0]]);
    const odd = await baton.admin.listJobs({ queue, jobType: 'odd' });
    expect(odd.jobs.map((j) => j.id)).toEqual([ids[3], ids[1]]);
    expect((await baton.admin.listJobs({ queue, state: 'succeeded' })).total).toBe(1);

    for (const bad of [{ state: 'bogus' }, { limit: 0 }, { limit: 501 }, { limit: 1.5 }, { offset: -1 }]) {
      await expectBatonError(baton.admin.listJobs(bad as never), 'INVALID_ARGUMENT');
    }
  });

  it('queueDepth and queues: counts by state, zeros included', async () => {
    const queue = fresh();
    await insertJobs(db.pool, 2, { queue });
    await insertJob(db.pool, { queue, state: 'running' });
    await insertJob(db.pool, { queue, state: 'dead_lettered' });
    const depth = await baton.admin.queueDepth(queue);
    expect(depth).toEqual({ pending: 2, leased: 0, running: 1, succeeded: 0, dead_lettered: 1, cancelled: 0 });
    expect(await baton.admin.queueDepth(fresh())).toEqual({ pending: 0, leased: 0, running: 0, succeeded: 0, dead_lettered: 0, cancelled: 0 });
    const queues = await baton.admin.queues();
    expect(queues.find((q) => q.queue === queue)?.counts).toEqual(depth);
  });
});
