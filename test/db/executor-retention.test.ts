// Conformance of the retention writes: jobPurge deletes the finished jobs of one state older
// than an age, oldest first, at most a batch, and nothing else, and nothing at all under an
// epoch that does not hold the leader lease; jobCompleteMany with deleteRows deletes the jobs
// it completes, fenced by token like every outcome write.

import { describe, expect, it } from 'vitest';
import { jobRow } from '../helpers/factory.ts';
import { takeLeaderLease } from '../helpers/leader.ts';
import { insertJob, insertJobs } from '../helpers/factory.ts';
import { claim, ex, expireLeases, fresh, reapExpired, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();
const HOUR = 3_600_000;
const exists = async (id: string) => (await jobRow(db.pool, id)) !== undefined;

describe('jobPurge', () => {
  it('deletes the oldest jobs finished in that state before the age, at most the limit, and reports them per queue', async () => {
    const [qa, qb] = [fresh('purge'), fresh('purge')];
    const old1 = await insertJob(db.pool, { queue: qa, state: 'succeeded', finishedAt: { inMs: -3 * HOUR } });
    const old2 = await insertJob(db.pool, { queue: qb, state: 'succeeded', finishedAt: { inMs: -2.5 * HOUR } });
    const old3 = await insertJob(db.pool, { queue: qa, state: 'succeeded', finishedAt: { inMs: -2 * HOUR } });
    const young = await insertJob(db.pool, { queue: qa, state: 'succeeded', finishedAt: { inMs: -0.5 * HOUR } });
    const deadOld = await insertJob(db.pool, { queue: qa, state: 'dead_lettered', finishedAt: { inMs: -5 * HOUR } });
    const pending = await insertJob(db.pool, { queue: qa });
    const epoch = await takeLeaderLease(db.pool);

    const first = await ex.jobPurge({ state: 'succeeded', olderThanMs: HOUR, limit: 2, epoch });
    // The two oldest, one per queue.
    expect(first.sort((a, b) => a.queue.localeCompare(b.queue))).toEqual(
      [
        { queue: qa, n: 1 },
        { queue: qb, n: 1 },
      ].sort((a, b) => a.queue.localeCompare(b.queue)),
    );
    expect([await exists(old1), await exists(old2), await exists(old3)]).toEqual([false, false, true]);
    const second = await ex.jobPurge({ state: 'succeeded', olderThanMs: HOUR, limit: 2, epoch });
    expect(second).toEqual([{ queue: qa, n: 1 }]);
    expect(await exists(old3)).toBe(false);
    // Younger than the age, another state, or not finished: kept.
    for (const id of [young, deadOld, pending]) expect(await exists(id)).toBe(true);
    expect(await ex.jobPurge({ state: 'succeeded', olderThanMs: HOUR, limit: 2, epoch })).toEqual([]);
    expect(await ex.jobPurge({ state: 'dead_lettered', olderThanMs: HOUR, limit: 10, epoch })).toEqual([{ queue: qa, n: 1 }]);
    expect(await exists(deadOld)).toBe(false);
  });

  it('with age 0 deletes every job finished in that state so far', async () => {
    const queue = fresh('purge0');
    const ids = await insertJobs(db.pool, 3, { queue, state: 'cancelled' });
    const epoch = await takeLeaderLease(db.pool);
    expect(await ex.jobPurge({ state: 'cancelled', olderThanMs: 0, limit: 100, epoch })).toContainEqual({ queue, n: 3 });
    for (const id of ids) expect(await exists(id)).toBe(false);
  });

  it('deletes nothing under an epoch that was taken over, or whose lease expired', async () => {
    const queue = fresh('purge-fenced');
    const ids = await insertJobs(db.pool, 2, { queue, state: 'succeeded' });
    const deposed = await takeLeaderLease(db.pool, { holder: 'a' });
    const current = await takeLeaderLease(db.pool, { holder: 'b' });
    expect(await ex.jobPurge({ state: 'succeeded', olderThanMs: 0, limit: 100, epoch: deposed })).toEqual([]);
    for (const id of ids) expect(await exists(id)).toBe(true);
    await db.query('UPDATE baton.leader_lease SET expires_at = now()');
    expect(await ex.jobPurge({ state: 'succeeded', olderThanMs: 0, limit: 100, epoch: current })).toEqual([]);
    for (const id of ids) expect(await exists(id)).toBe(true);
  });
});

describe('jobCompleteMany with deleteRows', () => {
  it('deletes the rows whose token is current and leaves a row taken over by another worker alone', async () => {
    const queue = fresh('del');
    const ids = await insertJobs(db.pool, 2, { queue });
    const mine = await claim(queue, 2, { owner: 'w-a' });
    const tokenOf = new Map(mine.map((j) => [j.id, j.token]));
    await expireLeases([ids[1]!]);
    await reapExpired([ids[1]!]);
    const [taken] = await claim(queue, 1, { owner: 'w-b' });
    expect(taken!.id).toBe(ids[1]);
    const ok = await ex.jobCompleteMany({ items: ids.map((id) => ({ id, token: tokenOf.get(id)!, result: null })), deleteRows: true });
    expect([...ok]).toEqual([ids[0]]);
    expect(await exists(ids[0]!)).toBe(false);
    expect(await jobRow(db.pool, ids[1]!)).toMatchObject({ state: 'running', lease_owner: 'w-b' });
  });
});
