// The map of finished jobs' blocks (finished_blocks, migration 0024), on the real statements:
// every statement that finishes a job records its queue's block (completion, failure,
// release, reap, cancel, a dependent cancelled by its parent, a row inserted finished), one row
// per block however many jobs finish there; and listings and counts by queue find a queue's
// finished jobs through it, newest first, across blocks, skipping blocks with none left. The
// completion's skip of blocks it recorded moments ago: recorded-blocks.test.ts.

import { describe, expect, it } from 'vitest';
import { FINISHED_BLOCK_SHIFT } from '../../src/db/pg/queries/job.ts';
import { insertJob, insertJobs } from '../helpers/factory.ts';
import { attemptError, baton, claim, ex, expireLeases, fresh, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();
const blockOf = (id: string) => String(BigInt(id) >> BigInt(FINISHED_BLOCK_SHIFT));

async function blocksOf(queue: string): Promise<string[]> {
  const r = await db.query<{ block: string }>('SELECT block::text FROM baton.finished_blocks WHERE queue = $1 ORDER BY block', [queue]);
  return r.rows.map((x) => x.block);
}

/** Moves the identity to the start of a block above every id so far: the next jobs share a new block. */
async function nextBlock(): Promise<void> {
  await db.query(`SELECT setval('baton.jobs_id_seq', ((last_value >> ${FINISHED_BLOCK_SHIFT}) + 2) << ${FINISHED_BLOCK_SHIFT}, false)
    FROM baton.jobs_id_seq`);
}

describe('finished_blocks', () => {
  it('a completion records the block of its jobs once, whatever the number of jobs or batches', async () => {
    const queue = fresh('done');
    await nextBlock();
    const ids = await insertJobs(db.pool, 4, { queue });
    expect(await blocksOf(queue)).toEqual([]);
    const leases = await claim(queue, 4);
    const done = (ls: typeof leases) => ls.map((l) => ({ id: l.id, token: l.token, result: null }));
    await ex.jobCompleteMany({ items: done(leases.slice(0, 2)) });
    await ex.jobCompleteMany({ items: done(leases.slice(2)) });
    expect(await blocksOf(queue)).toEqual([blockOf(ids[0]!)]);
  });

  it('a terminal failure, a release with the budget spent, a reaped lease with it spent and a cancel record theirs', async () => {
    const queues = { fail: fresh('fail'), release: fresh('release'), reap: fresh('reap'), cancel: fresh('cancel') };
    const first: Record<string, string> = {};
    for (const [kind, queue] of Object.entries(queues)) {
      await nextBlock();
      first[kind] = (await insertJobs(db.pool, 1, { queue, maxAttempts: 1 }))[0]!;
    }
    const [f] = await claim(queues.fail, 1);
    await ex.jobFailMany({
      items: [{ id: f!.id, token: f!.token, error: attemptError(f!.attempt, f!.token), terminal: true }],
      backoffBaseMs: 10,
      backoffCapMs: 10,
    });
    const [r] = await claim(queues.release, 1);
    await ex.jobReleaseMany({ leases: [{ id: r!.id, token: r!.token }], refundAttempt: false });
    const [x] = await claim(queues.reap, 1);
    await expireLeases([x!.id]);
    await ex.jobReap({ limit: 10_000, graceMs: 60_000, fastReclaim: false });
    await ex.jobCancel({ id: first.cancel! });
    for (const [kind, queue] of Object.entries(queues)) expect(await blocksOf(queue), kind).toEqual([blockOf(first[kind]!)]);
  });

  it('a dependent cancelled because its parent was dead-lettered records its block', async () => {
    const queue = fresh('deps');
    const parent = await baton.enqueue({ jobType: 'p', queue, maxAttempts: 1 });
    await nextBlock();
    const child = await baton.enqueue({ jobType: 'c', queue, dependsOn: [parent.job.id] });
    const [p] = await claim(queue, 1);
    await ex.jobFailMany({
      items: [{ id: p!.id, token: p!.token, error: attemptError(p!.attempt, p!.token), terminal: true }],
      backoffBaseMs: 10,
      backoffCapMs: 10,
    });
    expect((await ex.jobGet({ id: child.job.id }))?.state).toBe('cancelled');
    expect(await blocksOf(queue)).toEqual([blockOf(parent.job.id), blockOf(child.job.id)].sort());
  });

  it('a row inserted finished records its block; a finished row moved to another queue records the new queue', async () => {
    const [a, b] = [fresh('ins'), fresh('ins')];
    const id = await insertJob(db.pool, { queue: a, state: 'succeeded' });
    expect(await blocksOf(a)).toEqual([blockOf(id)]);
    await db.query('UPDATE baton.jobs SET queue = $2 WHERE id = $1', [id, b]);
    expect(await blocksOf(b)).toEqual([blockOf(id)]);
  });

  it("listings and counts by queue read the queue's finished jobs block by block, newest first, past empty blocks", async () => {
    const queue = fresh('list');
    const other = fresh('list');
    const ids: string[] = [];
    // Three blocks with a finished job of the queue each, the middle one also with a pending job,
    // and a block whose row outlived its jobs (deleted by hand, as retention would have).
    for (let i = 0; i < 3; i++) {
      await nextBlock();
      ids.push(await insertJob(db.pool, { queue, state: i === 1 ? 'dead_lettered' : 'succeeded' }));
      await insertJob(db.pool, { queue: other, state: 'succeeded' });
    }
    await nextBlock();
    const gone = await insertJob(db.pool, { queue, state: 'succeeded' });
    await db.query('DELETE FROM baton.jobs WHERE id = $1', [gone]);
    const pending = await insertJob(db.pool, { queue });
    expect(await blocksOf(queue)).toHaveLength(4);

    const list = async (p: { state?: 'succeeded' | 'dead_lettered'; limit: number; offset: number }) =>
      (await ex.jobList({ queue, ...p })).map((j) => j.id);
    expect(await list({ limit: 10, offset: 0 })).toEqual([pending, ids[2], ids[1], ids[0]]);
    expect(await list({ limit: 2, offset: 1 })).toEqual([ids[2], ids[1]]);
    expect(await list({ state: 'succeeded', limit: 10, offset: 0 })).toEqual([ids[2], ids[0]]);
    expect(await list({ state: 'dead_lettered', limit: 10, offset: 0 })).toEqual([ids[1]]);
    expect(await ex.jobCountCapped({ queue, cap: 100 })).toBe(4);
    expect(await ex.jobCountCapped({ queue, state: 'succeeded', cap: 100 })).toBe(2);
    expect(await ex.jobCountCapped({ queue, cap: 2 })).toBe(2);
    // Sorted listings over the same parts.
    expect((await ex.jobList({ queue, sort: 'createdAt', order: 'asc', limit: 10, offset: 0 })).map((j) => j.id)).toEqual([
      ids[0],
      ids[1],
      ids[2],
      pending,
    ]);
  });
});
