// A completion that names its jobs' queues skips the record of a block in finished_blocks that
// its executor inserted moments ago (src/db/pg/recorded-blocks.ts), on the real statements: only
// blocks the executor itself inserted, for their queue only, for the trust window only, with
// the block arithmetic of SQL (block boundaries, ids past 2^53); and however completions
// interleave, every finished job stays listed by its queue, also one moved to another queue
// while it was leased (migration 0026), and one committed into a block after retention walked past it.

import { describe, expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { FINISHED_BLOCK_SHIFT } from '../../src/db/pg/queries/job.ts';
import { blockOf as jsBlockOf, RECORDED_BLOCK_TRUST_MS } from '../../src/db/pg/recorded-blocks.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { insertJobs } from '../helpers/factory.ts';
import { takeLeaderLease } from '../helpers/leader.ts';
import { claim, ex, fresh, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();
const blockOf = (id: string) => String(BigInt(id) >> BigInt(FINISHED_BLOCK_SHIFT));

async function blocksOf(queue: string): Promise<string[]> {
  const r = await db.query<{ block: string }>('SELECT DISTINCT block::text FROM baton.finished_blocks WHERE queue = $1 ORDER BY 1', [
    queue,
  ]);
  return r.rows.map((x) => x.block);
}

/** The next id the identity hands out. */
async function nextIdAt(id: bigint): Promise<void> {
  await db.query(`SELECT setval('baton.jobs_id_seq', $1::bigint, false)`, [String(id)]);
}

/** Moves the identity to the start of a block above every id so far. */
async function nextBlock(): Promise<void> {
  await db.query(`SELECT setval('baton.jobs_id_seq', ((last_value >> ${FINISHED_BLOCK_SHIFT}) + 2) << ${FINISHED_BLOCK_SHIFT}, false)
    FROM baton.jobs_id_seq`);
}

/** An executor on a clock the test moves. */
function timedExecutor(): { ex: PgExecutor; advance: (ms: number) => void } {
  let clock = 0;
  return { ex: new PgExecutor(db.pool, quoteSchema(db.schema), { now: () => clock }), advance: (ms) => (clock += ms) };
}

type Leases = Awaited<ReturnType<typeof claim>>;
const done = (queue: string, ls: Leases) => ({ items: ls.map((l) => ({ id: l.id, token: l.token, result: null, queue })) });

describe('completions skip the blocks their executor inserted moments ago', () => {
  it('skips a block it inserted, for that queue only, until the trust window ends', async () => {
    const timed = timedExecutor();
    const [a, b] = [fresh('known'), fresh('known')];
    await nextBlock();
    const [first] = await insertJobs(db.pool, 3, { queue: a });
    await insertJobs(db.pool, 1, { queue: b });
    const leases = await claim(a, 3);
    const [other] = await claim(b, 1);
    await timed.ex.jobCompleteMany(done(a, leases.slice(0, 1)));
    expect(await blocksOf(a)).toEqual([blockOf(first!)]);
    // Taken away behind its back: a completion in the same block within the window does not
    // look again, which is the skip itself (retention never takes a row away while a job of
    // its queue is still in the block).
    await db.query('DELETE FROM baton.finished_blocks WHERE queue = $1', [a]);
    await timed.ex.jobCompleteMany(done(a, leases.slice(1, 2)));
    expect(await blocksOf(a)).toEqual([]);
    // Another queue's jobs in the same block are not known.
    await timed.ex.jobCompleteMany(done(b, [other!]));
    expect(await blocksOf(b)).toEqual([blockOf(first!)]);
    // Past the window the block is recorded again.
    timed.advance(RECORDED_BLOCK_TRUST_MS + 1);
    await timed.ex.jobCompleteMany(done(a, leases.slice(2)));
    expect(await blocksOf(a)).toEqual([blockOf(first!)]);
  });

  it('does not trust a block row it found rather than inserted (a retention statement may be deleting it)', async () => {
    const timed = timedExecutor();
    const queue = fresh('found');
    await nextBlock();
    const [first] = await insertJobs(db.pool, 3, { queue });
    const leases = await claim(queue, 3);
    // Another executor inserts the block's row first.
    await ex.jobCompleteMany(done(queue, leases.slice(0, 1)));
    await timed.ex.jobCompleteMany(done(queue, leases.slice(1, 2)));
    await db.query('DELETE FROM baton.finished_blocks WHERE queue = $1', [queue]);
    await timed.ex.jobCompleteMany(done(queue, leases.slice(2)));
    expect(await blocksOf(queue)).toEqual([blockOf(first!)]);
  });

  it('does not trust the block of a job it was fenced off from', async () => {
    const timed = timedExecutor();
    const queue = fresh('fenced');
    await nextBlock();
    const [first] = await insertJobs(db.pool, 2, { queue });
    const [stale, live] = await claim(queue, 2);
    await db.query(`UPDATE baton.jobs SET lease_token = nextval('baton.lease_token_seq') WHERE id = $1`, [stale!.id]);
    expect((await timed.ex.jobCompleteMany(done(queue, [stale!]))).size).toBe(0);
    expect(await blocksOf(queue)).toEqual([]);
    await timed.ex.jobCompleteMany(done(queue, [live!]));
    expect(await blocksOf(queue)).toEqual([blockOf(first!)]);
  });

  it('tells blocks apart on both sides of a block boundary', async () => {
    const timed = timedExecutor();
    const queue = fresh('edge');
    // The last id of an even block and the first of the next: one block apart by >> 8, one
    // block by a wrong divisor of 512.
    const k =
      ((BigInt((await db.query<{ v: string }>('SELECT last_value::text AS v FROM baton.jobs_id_seq')).rows[0]!.v) >> 9n) + 2n) << 1n;
    await nextIdAt((k << 8n) + 255n);
    const ids = await insertJobs(db.pool, 2, { queue });
    expect(ids.map(blockOf)).toEqual([String(k), String(k + 1n)]);
    // The later id first: a block computed one too high for the earlier id would then be trusted.
    const leases = (await claim(queue, 2)).sort((x, y) => (BigInt(y.id) > BigInt(x.id) ? 1 : -1));
    for (const l of leases) await timed.ex.jobCompleteMany(done(queue, [l]));
    expect(await blocksOf(queue)).toEqual([String(k), String(k + 1n)]);
  });

  it('a live job moved to another queue by hand stays listed by its new queue, and its old queue by its other jobs', async () => {
    const timed = timedExecutor();
    const [a, b, c] = [fresh('from'), fresh('to'), fresh('to')];
    await nextBlock();
    // Block B: j1, j2 and j3 of queue a. j1 completes (its block is inserted and trusted), then
    // j2 moves to b while leased and completes through the skip decided on queue a.
    const [j1, j2, j3] = await insertJobs(db.pool, 3, { queue: a });
    const leases = await claim(a, 3);
    const byId = new Map(leases.map((l) => [l.id, l]));
    await timed.ex.jobCompleteMany(done(a, [byId.get(j1!)!]));
    await db.query('UPDATE baton.jobs SET queue = $2 WHERE id = $1', [j2, b]);
    await timed.ex.jobCompleteMany(done(a, [byId.get(j2!)!]));
    expect((await ex.jobList({ queue: b, limit: 10, offset: 0 })).map((j) => j.id)).toEqual([j2]);
    // j3 moves to c while leased and completes through the full statement (its queue's block is
    // not trusted): it inserts nothing for a, so a's trust is not widened.
    await db.query('UPDATE baton.jobs SET queue = $2 WHERE id = $1', [j3, c]);
    await timed.ex.jobCompleteMany(done(c, [byId.get(j3!)!]));
    expect((await ex.jobList({ queue: c, limit: 10, offset: 0 })).map((j) => j.id)).toEqual([j3]);
    expect((await ex.jobList({ queue: a, limit: 10, offset: 0 })).map((j) => j.id)).toEqual([j1]);
  });

  it('completions interleaved over queues and blocks leave every finished job listed by its queue', async () => {
    const timed = timedExecutor();
    const queues = [fresh('mix'), fresh('mix'), fresh('mix')];
    const ids = new Map<string, string[]>(queues.map((q) => [q, []]));
    for (let block = 0; block < 3; block++) {
      await nextBlock();
      for (let i = 0; i < 12; i++) {
        const queue = queues[(i + block) % queues.length]!;
        ids.get(queue)!.push(...(await insertJobs(db.pool, 1, { queue })));
      }
    }
    const leases = (await Promise.all(queues.map(async (q) => (await claim(q, 100)).map((l) => ({ ...l, queue: q }))))).flat();
    // Batches of 5 across queues and blocks, in an order that mixes them.
    leases.sort((x, y) => Number(BigInt(x.id) % 7n) - Number(BigInt(y.id) % 7n) || x.id.localeCompare(y.id));
    for (let i = 0; i < leases.length; i += 5) {
      const batch = leases.slice(i, i + 5).map((l) => ({ id: l.id, token: l.token, result: null, queue: l.queue }));
      expect((await timed.ex.jobCompleteMany({ items: batch })).size).toBe(batch.length);
    }
    for (const queue of queues) {
      const expected = [...ids.get(queue)!].sort((x, y) => Number(BigInt(y) - BigInt(x)));
      expect((await ex.jobList({ queue, limit: 100, offset: 0 })).map((j) => j.id)).toEqual(expected);
      expect(await blocksOf(queue)).toEqual([...new Set(expected.map(blockOf))].sort());
    }
  });

  it('a job committed into a block after a retention walk passed it is listed by its queue', async () => {
    // The walk deletes the row of a block that holds no job of its queue it can see, so a row
    // recorded for a block before any job of the queue is in it (speculatively, say) would be
    // gone, and trusted, when a job of the queue inserted earlier commits there.
    const timed = timedExecutor();
    const [queue, other] = [fresh('late'), fresh('late-other')];
    await nextBlock();
    const batch = await insertJobs(db.pool, 64, { queue });
    const a = BigInt(blockOf(batch[0]!));
    // An enqueue of the queue draws the first id of A + 1 and stays open; other queues' jobs
    // fill A + 1, A + 2 and beyond.
    await nextIdAt((a + 1n) << BigInt(FINISHED_BLOCK_SHIFT));
    const open = await db.pool.connect();
    let late: string;
    try {
      await open.query('BEGIN');
      late = (await open.query<{ id: string }>(`INSERT INTO baton.jobs (queue, job_type) VALUES ($1, 't') RETURNING id::text`, [queue]))
        .rows[0]!.id;
      expect(blockOf(late)).toBe(String(a + 1n));
      await insertJobs(db.pool, 600, { queue: other });
      // All of it older than the retention age below.
      await db.query(`UPDATE baton.jobs SET created_at = now() - interval '2 hours' WHERE queue IN ($1, $2)`, [queue, other]);
      await timed.ex.jobCompleteMany(done(queue, await claim(queue, 64)));
      expect(await blocksOf(queue)).toEqual([String(a)]);
      // Retention (an age above the trust window) walks past A + 1 and A + 2, deleting nothing of the queue.
      await ex.jobPurgeScan({
        after: String((a << BigInt(FINISHED_BLOCK_SHIFT)) - 1n),
        read: 1_000,
        ages: { succeeded: 60_000, cancelled: null, dead_lettered: null },
        epoch: await takeLeaderLease(db.pool),
      });
      await open.query('COMMIT');
    } finally {
      // Closed rather than pooled: a failed step above leaves its transaction open.
      open.release(true);
    }
    // The late job completes within the trust window: its block is recorded, and it is listed.
    const [lease] = await claim(queue, 1);
    expect(lease!.id).toBe(late);
    await timed.ex.jobCompleteMany(done(queue, [lease!]));
    expect(await blocksOf(queue)).toEqual([String(a), String(a + 1n)]);
    const listed = await ex.jobList({ queue, state: 'succeeded', limit: 200, offset: 0 });
    expect(listed.map((j) => j.id)).toContain(late);
  });

  // Last in the file: the identity stays past 2^54 afterwards.
  it('computes blocks past 2^53 exactly, as SQL does', async () => {
    const timed = timedExecutor();
    const queue = fresh('big');
    await nextIdAt(2n ** 54n + 255n);
    const ids = await insertJobs(db.pool, 2, { queue });
    expect(ids.map(jsBlockOf)).toEqual(ids.map(blockOf));
    expect(new Set(ids.map(jsBlockOf)).size).toBe(2);
    const leases = await claim(queue, 2);
    for (const l of leases) await timed.ex.jobCompleteMany(done(queue, [l]));
    expect(await blocksOf(queue)).toEqual([...new Set(ids.map(blockOf))].sort());
  });
});
