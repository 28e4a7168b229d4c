// Query plans cached while the jobs table was new: no statistics yet and a handful of rows.
// A connection caches a statement's generic plan after a few executions and keeps it until
// the next ANALYZE, however much the table grows meanwhile. The claim and the lease writes
// must reach their rows by primary key in such a plan too, not scan the whole table.
// Read from EXPLAIN ANALYZE of the cached plan once the table has grown.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { jobQueries } from '../../src/db/pg/queries/job.ts';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { quoteSchema } from '../../src/db/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { jobScans, type PlanNode } from '../helpers/plan-node.ts';

const db = useTestDatabase();
const q = jobQueries(quoteSchema('baton'));
const GROWN_TO = 2_000;

let client: pg.PoolClient;
let claimPlan: PlanNode;
let completePlan: PlanNode;

const explainExecute = async (name: string, args: string) =>
  ((await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ${name}(${args})`)).rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!
    .Plan;

beforeAll(async () => {
  // Autovacuum's ANALYZE would replace the cached plans and hide what this file looks for.
  await db.query('ALTER TABLE baton.jobs SET (autovacuum_enabled = false)');
  await db.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'q', 'fresh' FROM generate_series(1, 4)`);
  const ex = new PgExecutor(db.pool, quoteSchema('baton'));
  const leases = await ex.jobClaim({ queue: 'q', limit: 2, owner: 'w-fresh', leaseMs: 60_000, intoRunning: true });
  expect(leases).toHaveLength(2);
  const [first, second] = leases as [(typeof leases)[0], (typeof leases)[0]];

  client = await db.pool.connect();
  // The plan the cache settles on after five executions, made now: the table holds 4 rows.
  await client.query('SET plan_cache_mode = force_generic_plan');
  await client.query(`PREPARE claim(text, int, text, boolean, double precision) AS ${q.claim.text}`);
  await client.query(`PREPARE complete(bigint[], bigint[], jsonb[]) AS ${q.completeMany.text}`);
  expect((await client.query(`EXECUTE claim('q', 1, 'w-fresh', true, 60000)`)).rowCount).toBe(1);
  expect((await client.query(`EXECUTE complete('{${first.id}}', '{${first.token}}', NULL)`)).rows[0].ids).toBeNull();

  await db.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'q', 'fresh' FROM generate_series(1, $1::int)`, [GROWN_TO]);
  claimPlan = await explainExecute('claim', `'q', 1, 'w-fresh', true, 60000`);
  completePlan = await explainExecute('complete', `'{${second.id}}', '{${second.token}}', NULL`);
});

afterAll(async () => {
  await client?.query('DEALLOCATE ALL');
  client?.release();
});

describe(`plans cached on a new table, run after it grew to ${GROWN_TO} rows`, () => {
  it.each([
    ['the claim', () => claimPlan],
    ['a complete', () => completePlan],
  ])('%s reaches its row by primary key', (_name, plan) => {
    const scans = jobScans(plan());
    expect(scans.map((s) => s['Node Type'])).not.toContain('Seq Scan');
    expect(scans.map((s) => s['Index Name'])).toContain('jobs_pkey');
    // One row written; a scan of the grown table would throw away about 2,000.
    for (const s of scans) expect(s['Actual Rows'] * s['Actual Loops'] + (s['Rows Removed by Filter'] ?? 0)).toBeLessThanOrEqual(1);
  });
});
