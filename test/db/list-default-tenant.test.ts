// The default tenant's history is not in the index of finished jobs by tenant (migration 0021):
// a listing of it walks the primary key 1,000 ids at a time. Its pages must be exactly what a
// plain scan of the table would give, across chunk boundaries, with offsets and states, and
// with other tenants' rows in between.

import { beforeAll, describe, expect, it } from 'vitest';
import { jobReadQueries, shapeValues } from '../../src/db/pg/queries/job-read.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase();
const rq = jobReadQueries(quoteSchema('baton'));

beforeAll(async () => {
  // 5,000 finished jobs, one in seven of another tenant, one in ten dead-lettered, and a few live ones.
  await db.query(`INSERT INTO baton.jobs (queue, tenant_id, job_type, state, finished_at, dead_letter_reason, attempt)
    SELECT 'q', CASE WHEN g % 7 = 0 THEN 'acme' ELSE 'default' END, 'x',
      CASE WHEN g % 10 = 0 THEN 'dead_lettered' ELSE 'succeeded' END, now(),
      CASE WHEN g % 10 = 0 THEN 'terminal_error' END, 1
    FROM generate_series(1, 5000) g`);
  await db.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'q', 'x' FROM generate_series(1, 3)`);
});

async function page(tenantId: string, state: 'succeeded' | 'dead_lettered' | undefined, limit: number, offset: number): Promise<string[]> {
  const { shape, values } = shapeValues({ tenantId });
  const q = rq.list({ ...shape, state });
  return (await db.query<{ id: string }>(q.text, [...values, limit, offset])).rows.map((r) => String(r.id));
}

async function truth(tenantId: string, state: string | undefined, limit: number, offset: number): Promise<string[]> {
  const r = await db.query<{ id: string }>(
    `SELECT j.id::text AS id FROM baton.jobs j WHERE j.tenant_id = $1 AND ($2::text IS NULL OR j.state = $2) ORDER BY j.id DESC LIMIT $3 OFFSET $4`,
    [tenantId, state ?? null, limit, offset],
  );
  return r.rows.map((x) => x.id);
}

describe("listing the default tenant's history", () => {
  it.each([
    [undefined, 50, 0],
    [undefined, 500, 0],
    [undefined, 100, 950],
    [undefined, 1000, 3000],
    ['succeeded', 200, 1500],
    ['dead_lettered', 100, 0],
    ['dead_lettered', 100, 400],
    [undefined, 100, 10_000],
  ] as const)('state %s, limit %i, offset %i: the same page as a scan', async (state, limit, offset) => {
    expect(await page('default', state, limit, offset)).toEqual(await truth('default', state, limit, offset));
  });

  it("another tenant's pages come through its own index, the same as a scan", async () => {
    expect(await page('acme', undefined, 100, 200)).toEqual(await truth('acme', undefined, 100, 200));
  });
});
