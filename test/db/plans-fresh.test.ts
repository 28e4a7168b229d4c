// Query plans cached while the jobs table was new: no statistics yet and a handful of rows.
// A connection caches a statement's generic plan after a few executions and keeps it until
// the next ANALYZE, however much the table grows meanwhile. The claim and the completion of a
// few leases (named statements; other lease writes are sent unnamed and planned per execution)
// must reach their rows by primary key in such a plan too, not scan the whole table. Read from EXPLAIN ANALYZE of the cached
// plan once the table has grown.

import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { jobQueries } from '../../src/db/pg/queries/job.ts';
import { SIZE_IN_TEXT_MAX } from '../../src/db/pg/queries/job-fragments.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { jobScans, type PlanNode } from '../helpers/plan-node.ts';

const db = useTestDatabase();
const q = jobQueries(quoteSchema('baton'));
const GROWN_TO = 2_000;

let client: pg.PoolClient;
let claimPlan: PlanNode;
let claimOfOnePlan: PlanNode;
let completionPlan: PlanNode;

beforeAll(async () => {
  // Autovacuum's ANALYZE would replace the cached plans and hide what this file looks for.
  await db.query('ALTER TABLE baton.jobs SET (autovacuum_enabled = false)');
  await db.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'q', 'fresh' FROM generate_series(1, 4)`);
  // A few claims through the executor, as a worker's first ones.
  const ex = new PgExecutor(db.pool, quoteSchema('baton'));
  expect(await ex.jobClaim({ queue: 'q', limit: 2, owner: 'w-fresh', leaseMs: 60_000, intoRunning: true })).toHaveLength(2);
  // And two batches of the largest completion that is named (batchIds), in a queue of their own.
  await db.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'c', 'fresh' FROM generate_series(1, $1::int)`, [2 * SIZE_IN_TEXT_MAX]);
  const batch = () => ex.jobClaim({ queue: 'c', limit: SIZE_IN_TEXT_MAX, owner: 'w-fresh', leaseMs: 60_000, intoRunning: true });
  const [first, second] = [await batch(), await batch()];

  client = await db.pool.connect();
  // The plan the cache settles on after five executions, made now: the table holds 4 rows.
  // The claim of a few jobs carries its limit in the text (claimLimit), so the cache settles on
  // its generic plan by itself; the larger claim's is forced here.
  await client.query('SET plan_cache_mode = force_generic_plan');
  await client.query(`PREPARE claim(text, int, text, boolean, double precision) AS ${q.claim.open.text}`);
  await client.query(`PREPARE claim1(text, int, text, boolean, double precision) AS ${q.claim(1).text}`);
  expect((await client.query(`EXECUTE claim('q', 1, 'w-fresh', true, 60000)`)).rowCount).toBe(1);
  expect((await client.query(`EXECUTE claim1('q', 1, 'w-fresh', true, 60000)`)).rowCount).toBe(1);
  // So does a named completion (batchIds).
  await client.query(`PREPARE complete(bigint[], bigint[], jsonb[]) AS ${q.completeMany(SIZE_IN_TEXT_MAX).text}`);
  const leases = (js: Array<{ id: string; token: string }>) =>
    `'{${js.map((j) => j.id).join(',')}}'::bigint[], '{${js.map((j) => j.token).join(',')}}'::bigint[]`;
  expect((await client.query(`EXECUTE complete(${leases(first)}, NULL)`)).rows[0].ids).toBeNull();

  await db.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'q', 'fresh' FROM generate_series(1, $1::int)`, [GROWN_TO]);
  const explain = async (name: string) =>
    (
      (await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name}('q', 1, 'w-fresh', true, 60000)`)).rows[0][
        'QUERY PLAN'
      ] as Array<{
        Plan: PlanNode;
      }>
    )[0]!.Plan;
  claimPlan = await explain('claim');
  claimOfOnePlan = await explain('claim1');
  const completion = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE complete(${leases(second)}, NULL)`);
  completionPlan = (completion.rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;
});

afterAll(async () => {
  // The pooled connection goes back as it came: no prepared claim, the default plan cache mode.
  await client?.query('DEALLOCATE ALL');
  await client?.query('RESET plan_cache_mode');
  client?.release();
});

describe(`the claim's plan cached on a new table, run after it grew to ${GROWN_TO} rows`, () => {
  it.each([
    ['the claim', () => claimPlan],
    ['the claim of one job (its limit in the text)', () => claimOfOnePlan],
  ])('%s picks through the claim index and reaches the picked row by primary key', (_, plan) => {
    const scans = jobScans(plan());
    expect(scans.map((s) => s['Index Name'] ?? s['Node Type']).sort()).toEqual(['jobs_claim_idx', 'jobs_pkey']);
    // One row written; a scan of the grown table would throw away about 2,000.
    for (const s of scans) expect(s['Actual Rows'] * s['Actual Loops'] + (s['Rows Removed by Filter'] ?? 0)).toBeLessThanOrEqual(1);
  });

  it(`the completion of ${SIZE_IN_TEXT_MAX} leases (their ids written out) reaches its rows by primary key`, () => {
    const scans = jobScans(completionPlan);
    expect(scans.map((s) => s['Index Name'] ?? s['Node Type'])).toEqual(['jobs_pkey']);
    // Its 32 rows; a scan of the grown table would throw away about 2,000.
    for (const s of scans) {
      expect(s['Actual Rows'] * s['Actual Loops'] + (s['Rows Removed by Filter'] ?? 0)).toBeLessThanOrEqual(SIZE_IN_TEXT_MAX);
    }
  });
});
