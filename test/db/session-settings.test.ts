// Baton's own sessions run without JIT. The fair claim's cost estimate grows with the pending
// rows the statistics last saw (its per-tenant LIMIT is an expression the planner cannot size):
// after an ANALYZE that saw a backlog it is above jit_above_cost, and a session with JIT on
// compiles the claim on every execution, tens of milliseconds for a claim that reads a few
// pages, on an idle queue too. Read from EXPLAIN ANALYZE of the claim's own statement text on a
// session of a pool Baton opens (openPool) and on a plain session; the backlog is still there,
// which changes nothing the planner decides on JIT from.

import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPool } from '../../src/db/pg/open-pool.ts';
import { flowQueries } from '../../src/db/pg/queries/flow-control.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase();
const fq = flowQueries(quoteSchema('baton'));
/** A backlog the fair claim's estimate grows past jit_above_cost (100,000 by default) with. */
const BACKLOG = 150_000;

interface Explained {
  Plan: { 'Total Cost': number };
  JIT?: { Functions: number };
}

/** The fair claim of one job, explained with ANALYZE (so JIT runs when planned) and rolled back. */
async function explainClaim(client: pg.ClientBase): Promise<Explained> {
  await client.query('BEGIN');
  try {
    const r = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${fq.claimFair.open.text}`, ['q', 1, 'w', true, 60_000, '', 0]);
    return (r.rows[0]['QUERY PLAN'] as Explained[])[0]!;
  } finally {
    await client.query('ROLLBACK');
  }
}

let own: pg.Pool;
let jitAboveCost: number;
let jitAvailable: boolean;

beforeAll(async () => {
  await db.query('ALTER TABLE baton.jobs SET (autovacuum_enabled = false)');
  await db.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'q', 'x' FROM generate_series(1, $1::int)`, [BACKLOG]);
  await db.query('ANALYZE baton.jobs');
  const [s] = (
    await db.query<{ cost: number; available: boolean }>(
      `SELECT current_setting('jit_above_cost')::float8 AS cost, current_setting('jit')::boolean AND pg_jit_available() AS available`,
    )
  ).rows;
  jitAboveCost = s!.cost;
  jitAvailable = s!.available;
  own = openPool({ connectionString: db.url, max: 1 });
});

afterAll(async () => {
  await own?.end();
});

describe('JIT and the fair claim after an ANALYZE that saw a backlog', () => {
  it('the claim is costed above jit_above_cost, so a session with JIT on compiles it', async () => {
    const client = await db.pool.connect();
    try {
      const plan = await explainClaim(client);
      expect(plan.Plan['Total Cost']).toBeGreaterThan(jitAboveCost);
      if (jitAvailable) expect(plan.JIT?.Functions).toBeGreaterThan(0);
    } finally {
      client.release();
    }
  });

  it("a session of Baton's own pool runs it without JIT", async () => {
    const client = await own.connect();
    try {
      expect((await client.query<{ jit: string }>('SHOW jit')).rows[0]!.jit).toBe('off');
      expect((await explainClaim(client)).JIT).toBeUndefined();
    } finally {
      client.release();
    }
  });
});
