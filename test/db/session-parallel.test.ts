// Baton's own sessions plan no parallel workers. Before the first ANALYZE of a table with a
// large history the planner guesses the live leases at a fifth of it and gathers two workers
// for the counts by queue (admin.queues, /metrics); starting them cost more than the read of a
// few index pages they serve. Read from the plan of that statement's own text on a session of a
// pool Baton opens (openPool) and on a plain session of the same database.

import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPool } from '../../src/db/pg/open-pool.ts';
import { jobReadQueries } from '../../src/db/pg/queries/job-read.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';

// Migrated afresh, not cloned from the template: its table has never been vacuumed or analyzed.
const db = useTestDatabase({ from: { schema: 'baton' } });
const counts = jobReadQueries(quoteSchema('baton')).countsByQueue(false).text;
/** Finished rows, never analyzed: enough for the planner to want workers. */
const HISTORY = 100_000;

let own: pg.Pool;

beforeAll(async () => {
  await db.query('ALTER TABLE baton.jobs SET (autovacuum_enabled = false)');
  await db.query(
    `INSERT INTO baton.jobs (queue, job_type, state, attempt, finished_at)
    SELECT 'q', 'x', 'succeeded', 1, now() FROM generate_series(1, $1::int)`,
    [HISTORY],
  );
  own = openPool({ connectionString: db.url, max: 1 });
});

afterAll(async () => {
  await own?.end();
});

async function gathers(pool: pg.Pool): Promise<boolean> {
  const r = await pool.query(`EXPLAIN (FORMAT JSON) ${counts}`);
  return JSON.stringify(r.rows[0]['QUERY PLAN']).includes('"Node Type":"Gather');
}

describe('parallel workers for the counts by queue next to an unanalyzed history', () => {
  it("a session of Baton's own pool runs with none", async () => {
    const client = await own.connect();
    try {
      const shown = await client.query<{ max_parallel_workers_per_gather: string }>('SHOW max_parallel_workers_per_gather');
      expect(shown.rows[0]!.max_parallel_workers_per_gather).toBe('0');
    } finally {
      client.release();
    }
    expect(await gathers(own)).toBe(false);
  });

  // Only where this server's planner wants workers for it (PostgreSQL 15 with its defaults
  // does; the embedded server's build need not): there the plain session's plan gathers.
  it('where a plain session plans workers for it, a Baton session does not', async (ctx) => {
    if (!(await gathers(db.pool))) ctx.skip();
    expect(await gathers(own)).toBe(false);
  });
});
