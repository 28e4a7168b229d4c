// Conformance of the retention writes: jobPurgeScan walks the jobs oldest id first (any
// queue, any state), deletes the finished ones past their state's age, reads at most a batch,
// stops at jobs created after the youngest age, deletes nothing at all under an epoch that
// does not hold the leader lease, and drops the finished_blocks rows of the blocks it emptied;
// jobCompleteMany with deleteRows deletes the jobs it completes, fenced by token like every
// outcome write.

import { describe, expect, it } from 'vitest';
import { FINISHED_BLOCK_SHIFT } from '../../src/db/pg/queries/job.ts';
import { insertJob, insertJobs, jobRow } from '../helpers/factory.ts';
import { takeLeaderLease } from '../helpers/leader.ts';
import { claim, ex, expireLeases, fresh, reapExpired, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();
const HOUR = 3_600_000;
const exists = async (id: string) => (await jobRow(db.pool, id)) !== undefined;
/** The walk reads every queue: each test starts from an empty table. */
const clearJobs = () => db.query('DELETE FROM baton.jobs');
const blocksOf = async (queue: string) =>
  (await db.query<{ block: string }>('SELECT block::text FROM baton.finished_blocks WHERE queue = $1 ORDER BY block', [queue])).rows.map(
    (r) => r.block,
  );
const blockOf = (id: string) => String(BigInt(id) >> BigInt(FINISHED_BLOCK_SHIFT));

/** In one order, whatever the database's collation. */
const byQueue = <T extends { queue: string }>(rows: T[]) => [...rows].sort((x, y) => (x.queue < y.queue ? -1 : 1));

const KEEP = { succeeded: null, cancelled: null, dead_lettered: null } as const;

describe('jobPurgeScan', () => {
  it("deletes finished jobs past their state's age, oldest id first, whatever their queue, and reads at most the batch", async () => {
    await clearJobs();
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

    // Two rows read (old1, the dead letter kept): one deleted, the walk not done.
    const first = await ex.jobPurgeScan({ after: '0', read: 2, ages, epoch });
    expect(first).toEqual({ last: deadOld, done: false, deleted: [{ queue: qa, state: 'succeeded', n: 1 }] });
    const second = await ex.jobPurgeScan({ after: first.last!, read: 2, ages, epoch });
    expect({ ...second, deleted: byQueue(second.deleted) }).toEqual({
      last: otherQueue,
      done: false,
      deleted: byQueue([
        { queue: qa, state: 'succeeded', n: 1 },
        { queue: qb, state: 'succeeded', n: 1 },
      ]),
    });
    // A pending job is read and passed, not deleted.
    const third = await ex.jobPurgeScan({ after: second.last!, read: 2, ages, epoch });
    expect(third).toEqual({ last: pending, done: false, deleted: [{ queue: qa, state: 'succeeded', n: 1 }] });
    // The young job was created after the youngest age: the walk stops before it, done.
    const fourth = await ex.jobPurgeScan({ after: third.last!, read: 2, ages, epoch });
    expect(fourth).toEqual({ last: null, done: true, deleted: [] });
    for (const id of [old1, old2, old3, otherQueue]) expect(await exists(id)).toBe(false);
    // Another state, not finished, or younger than the age: kept.
    for (const id of [deadOld, pending, young]) expect(await exists(id)).toBe(true);
    // Dead letters have an age of their own.
    const dead = await ex.jobPurgeScan({ after: '0', read: 10, ages: { ...ages, dead_lettered: HOUR }, epoch });
    expect(dead).toEqual({ last: pending, done: true, deleted: [{ queue: qa, state: 'dead_lettered', n: 1 }] });
    expect(await exists(deadOld)).toBe(false);
  });

  it('with age 0 deletes every job finished in that state so far, and counts them out of finished_counts', async () => {
    await clearJobs();
    const queue = fresh('purge0');
    const ids = await insertJobs(db.pool, 3, { queue, state: 'cancelled' });
    await db.query(`INSERT INTO baton.finished_counts (queue, state, shard, n) VALUES ($1, 'cancelled', 0, 3)`, [queue]);
    const epoch = await takeLeaderLease(db.pool);
    const r = await ex.jobPurgeScan({ after: '0', read: 100, ages: { ...KEEP, cancelled: 0 }, epoch });
    expect(r).toMatchObject({ done: true, deleted: [{ queue, state: 'cancelled', n: 3 }] });
    for (const id of ids) expect(await exists(id)).toBe(false);
    const [count] = (await db.query(`SELECT sum(n)::int AS n FROM baton.finished_counts WHERE queue = $1`, [queue])).rows;
    expect(count.n).toBe(0);
  });

  it('deletes nothing under an epoch that was taken over, or whose lease expired', async () => {
    await clearJobs();
    const queue = fresh('purge-fenced');
    const ids = await insertJobs(db.pool, 2, { queue, state: 'succeeded' });
    const blocks = await blocksOf(queue);
    const ages = { ...KEEP, succeeded: 0 };
    const deposed = await takeLeaderLease(db.pool, { holder: 'a' });
    const current = await takeLeaderLease(db.pool, { holder: 'b' });
    // Past the blocks' end, so that the blocks would be emptied were the rows deleted.
    await insertAt(BigInt(ids[1]!) + 1_000n, { queue: fresh('purge-fenced') });
    expect((await ex.jobPurgeScan({ after: '0', read: 100, ages, epoch: deposed })).deleted).toEqual([]);
    for (const id of ids) expect(await exists(id)).toBe(true);
    await db.query('UPDATE baton.leader_lease SET expires_at = now()');
    expect((await ex.jobPurgeScan({ after: '0', read: 100, ages, epoch: current })).deleted).toEqual([]);
    for (const id of ids) expect(await exists(id)).toBe(true);
    expect(await blocksOf(queue)).toEqual(blocks);
  });

  it('drops the blocks it passed whole that hold no job of their queue any more, and keeps the others', async () => {
    await clearJobs();
    const [qa, qb] = [fresh('blocks'), fresh('blocks')];
    const size = 1n << BigInt(FINISHED_BLOCK_SHIFT);
    // Block b0 holds a finished job of each queue; b1 a finished job of qa and a pending one of qb.
    const base = (BigInt(await nextId()) / size + 2n) * size;
    const at = (n: bigint) => String(n);
    const done = { state: 'succeeded' as const, createdAt: { inMs: -3 * HOUR }, finishedAt: { inMs: -3 * HOUR } };
    await insertAt(at(base), { queue: qa, ...done });
    await insertAt(at(base + 1n), { queue: qb, ...done });
    await insertAt(at(base + size), { queue: qa, ...done });
    await insertAt(at(base + size + 1n), { queue: qb, createdAt: { inMs: -3 * HOUR } });
    await db.query(`UPDATE baton.jobs SET state = 'succeeded', finished_at = now() - interval '3 hours' WHERE id = $1`, [
      at(base + size + 1n),
    ]);
    // Block b2: a finished job of qa beside a pending one of qa, which keeps the block's row.
    await insertAt(at(base + 2n * size), { queue: qa, ...done });
    await insertAt(at(base + 2n * size + 1n), { queue: qa, createdAt: { inMs: -3 * HOUR } });
    // A job past the three blocks, so the walk passes them whole.
    await insertAt(at(base + 3n * size), { queue: qa, createdAt: { inMs: -3 * HOUR } });
    const b0 = blockOf(at(base));
    const b1 = blockOf(at(base + size));
    const b2 = blockOf(at(base + 2n * size));
    expect(await blocksOf(qa)).toEqual([b0, b1, b2]);
    // Written by hand: the update finished the job without recording its block.
    expect(await blocksOf(qb)).toEqual([b0]);
    const epoch = await takeLeaderLease(db.pool);
    // Every succeeded job is due, of both queues.
    const r = await ex.jobPurgeScan({ after: '0', read: 100, ages: { ...KEEP, succeeded: HOUR }, epoch });
    expect(byQueue(r.deleted)).toEqual(
      byQueue([
        { queue: qa, state: 'succeeded', n: 3 },
        { queue: qb, state: 'succeeded', n: 2 },
      ]),
    );
    // b0 and b1 hold no job of either queue any more: their rows go. b2 still holds qa's
    // pending job: qa's row stays (that job may finish there). A block the walk has not passed
    // whole (the last job's) is never dropped.
    expect(await blocksOf(qa)).toEqual([b2]);
    expect(await blocksOf(qb)).toEqual([]);
    await insertAt(at(base + 4n * size), { queue: qb, ...done });
    await insertAt(at(base + 4n * size + 1n), { queue: qa, state: 'succeeded', finishedAt: { inMs: -3 * HOUR } });
    const b4 = blockOf(at(base + 4n * size));
    const again = await ex.jobPurgeScan({ after: at(base + 3n * size), read: 100, ages: { ...KEEP, succeeded: HOUR }, epoch });
    // qb's old job is deleted; qa's (created now) stops the walk before the block's end: kept.
    expect(again.deleted).toEqual([{ queue: qb, state: 'succeeded', n: 1 }]);
    expect(await blocksOf(qb)).toEqual([b4]);
    expect(await blocksOf(qa)).toEqual([b2, b4]);
  });
});

/** The identity's last value: every job so far has an id at most this. */
async function nextId(): Promise<string> {
  const [r] = (await db.query<{ id: string }>(`SELECT last_value::text AS id FROM baton.jobs_id_seq`)).rows;
  return r!.id;
}

/** Inserts a job with id `id` (above every id so far): the identity is moved to it first. */
async function insertAt(id: string | bigint, options: Parameters<typeof insertJob>[1]): Promise<string> {
  await db.query(`SELECT setval('baton.jobs_id_seq', $1::bigint - 1)`, [String(id)]);
  const got = await insertJob(db.pool, options);
  expect(got).toBe(String(id));
  return got;
}

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
