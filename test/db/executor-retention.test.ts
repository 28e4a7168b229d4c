// Conformance of the retention writes: jobPurgeScan walks a queue's finished jobs oldest id
// first, deletes those past their state's age, reads at most a batch and stops at jobs created
// after the youngest age, and deletes nothing at all under an epoch that does not hold the
// leader lease; jobCompleteMany with deleteRows deletes the jobs
// it completes, fenced by token like every outcome write.

import { describe, expect, it } from 'vitest';
import { insertJob, insertJobs, jobRow } from '../helpers/factory.ts';
import { takeLeaderLease } from '../helpers/leader.ts';
import { claim, ex, expireLeases, fresh, reapExpired, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();
const HOUR = 3_600_000;
const exists = async (id: string) => (await jobRow(db.pool, id)) !== undefined;

const KEEP = { succeeded: null, cancelled: null, dead_lettered: null } as const;
const none = { succeeded: 0, cancelled: 0, dead_lettered: 0 };

describe('jobPurgeScan', () => {
  it("deletes a queue's finished jobs past their state's age, oldest id first, and reads at most the batch", async () => {
    const [qa, qb] = [fresh('purge'), fresh('purge')];
    const ago = (h: number) => ({ createdAt: { inMs: -h * HOUR }, finishedAt: { inMs: -h * HOUR } });
    const old1 = await insertJob(db.pool, { queue: qa, state: 'succeeded', ...ago(3) });
    const deadOld = await insertJob(db.pool, { queue: qa, state: 'dead_lettered', ...ago(2.8) });
    const old2 = await insertJob(db.pool, { queue: qa, state: 'succeeded', ...ago(2.5) });
    const otherQueue = await insertJob(db.pool, { queue: qb, state: 'succeeded', ...ago(2.4) });
    const old3 = await insertJob(db.pool, { queue: qa, state: 'succeeded', ...ago(2) });
    const pending = await insertJob(db.pool, { queue: qa, createdAt: { inMs: -1.9 * HOUR } });
    const young = await insertJob(db.pool, { queue: qa, state: 'succeeded', ...ago(0.5) });
    const epoch = await takeLeaderLease(db.pool);
    const ages = { ...KEEP, succeeded: HOUR };

    // Two finished rows read (old1, the dead letter kept): one deleted, the walk not done.
    const first = await ex.jobPurgeScan({ queue: qa, after: '0', read: 2, ages, epoch });
    expect(first).toEqual({ last: deadOld, done: false, deleted: { ...none, succeeded: 1 } });
    const second = await ex.jobPurgeScan({ queue: qa, after: first.last!, read: 2, ages, epoch });
    expect(second).toEqual({ last: old3, done: false, deleted: { ...none, succeeded: 2 } });
    // The young job was created after the youngest age: the walk stops before it, done.
    const third = await ex.jobPurgeScan({ queue: qa, after: second.last!, read: 2, ages, epoch });
    expect(third).toEqual({ last: null, done: true, deleted: none });
    for (const id of [old1, old2, old3]) expect(await exists(id)).toBe(false);
    // Another queue, another state, not finished, or younger than the age: kept.
    for (const id of [otherQueue, deadOld, pending, young]) expect(await exists(id)).toBe(true);
    // Dead letters have an age of their own.
    const dead = await ex.jobPurgeScan({ queue: qa, after: '0', read: 10, ages: { ...ages, dead_lettered: HOUR }, epoch });
    expect(dead).toEqual({ last: deadOld, done: true, deleted: { ...none, dead_lettered: 1 } });
    expect(await exists(deadOld)).toBe(false);
  });

  it('with age 0 deletes every job finished in that state so far, and counts them out of finished_counts', async () => {
    const queue = fresh('purge0');
    const ids = await insertJobs(db.pool, 3, { queue, state: 'cancelled' });
    await db.query(`INSERT INTO baton.finished_counts (queue, state, shard, n) VALUES ($1, 'cancelled', 0, 3)`, [queue]);
    const epoch = await takeLeaderLease(db.pool);
    const r = await ex.jobPurgeScan({ queue, after: '0', read: 100, ages: { ...KEEP, cancelled: 0 }, epoch });
    expect(r).toMatchObject({ done: true, deleted: { ...none, cancelled: 3 } });
    for (const id of ids) expect(await exists(id)).toBe(false);
    const [count] = (await db.query(`SELECT sum(n)::int AS n FROM baton.finished_counts WHERE queue = $1`, [queue])).rows;
    expect(count.n).toBe(0);
  });

  it('deletes nothing under an epoch that was taken over, or whose lease expired', async () => {
    const queue = fresh('purge-fenced');
    const ids = await insertJobs(db.pool, 2, { queue, state: 'succeeded' });
    const ages = { ...KEEP, succeeded: 0 };
    const deposed = await takeLeaderLease(db.pool, { holder: 'a' });
    const current = await takeLeaderLease(db.pool, { holder: 'b' });
    expect((await ex.jobPurgeScan({ queue, after: '0', read: 100, ages, epoch: deposed })).deleted).toEqual(none);
    for (const id of ids) expect(await exists(id)).toBe(true);
    await db.query('UPDATE baton.leader_lease SET expires_at = now()');
    expect((await ex.jobPurgeScan({ queue, after: '0', read: 100, ages, epoch: current })).deleted).toEqual(none);
    for (const id of ids) expect(await exists(id)).toBe(true);
  });

  it('lists the queues that hold finished jobs', async () => {
    const [qa, qb, qc] = [fresh('fq'), fresh('fq'), fresh('fq')];
    await insertJob(db.pool, { queue: qa, state: 'succeeded' });
    await insertJob(db.pool, { queue: qb, state: 'dead_lettered' });
    await insertJob(db.pool, { queue: qc });
    const queues = await ex.jobFinishedQueues();
    expect(queues).toEqual(expect.arrayContaining([qa, qb]));
    expect(queues).not.toContain(qc);
    expect([...queues].sort()).toEqual(queues);
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
