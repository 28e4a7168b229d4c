// The jobs table leaves room on each page (migration 0004): a job's claim and outcome write
// new row versions, and with room they land on the row's own page instead of extending the
// table. Measured through the real claim and complete statements on a batch that fills pages.

import { describe, expect, it } from 'vitest';
import { jobQueries } from '../../src/db/pg/queries/job.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';

const db = useTestDatabase();
const queries = () => jobQueries(quoteSchema(db.schema));
const JOBS = 400;

/** Page number of each job's current row version, by id. */
async function pages(queue: string): Promise<Map<string, number>> {
  const r = await db.query<{ id: string; page: number }>(
    `SELECT id::text AS id, (ctid::text::point)[0]::int AS page FROM baton.jobs WHERE queue = $1`,
    [queue],
  );
  return new Map(r.rows.map((row) => [row.id, row.page]));
}

function stayed(before: Map<string, number>, after: Map<string, number>): number {
  let n = 0;
  for (const [id, page] of before) if (after.get(id) === page) n++;
  return n;
}

describe('jobs table fillfactor', () => {
  it('is set by the migrations, beside the vacuum settings of a queue table', async () => {
    const r = await db.query<{ opts: string[] | null }>(`SELECT reloptions AS opts FROM pg_class WHERE oid = 'baton.jobs'::regclass`);
    expect(r.rows[0]!.opts).toEqual([
      'fillfactor=50',
      'autovacuum_vacuum_scale_factor=0.01',
      'autovacuum_vacuum_threshold=10000',
      'autovacuum_vacuum_insert_scale_factor=0.01',
      'autovacuum_vacuum_insert_threshold=10000',
      'autovacuum_analyze_scale_factor=0.02',
      'autovacuum_analyze_threshold=10000',
      'vacuum_index_cleanup=on',
    ]);
  });

  it('keeps most claimed and completed versions on the page of the row they replace', async () => {
    const queue = 'ff';
    await db.query(
      `INSERT INTO baton.jobs (queue, job_type, payload) SELECT $1, 'x', jsonb_build_object('seq', g) FROM generate_series(1, $2::int) g`,
      [queue, JOBS],
    );
    const inserted = await pages(queue);
    const tablePages = new Set(inserted.values()).size;

    const claimed = await db.query<{ id: string; lease_token: string }>(queries().claim.open.text, [
      queue,
      JOBS,
      'ff-worker',
      true,
      60_000,
    ]);
    expect(claimed.rows).toHaveLength(JOBS);
    const afterClaim = await pages(queue);

    // The outcome's versions fit on the page only once the claim's old versions are pruned, and
    // PostgreSQL prunes a version only when no transaction older than its deleter is still
    // running anywhere on the server, in any database (the snapshot's xmin is server-wide).
    // Other test files write concurrently, so wait for that horizon to pass the claim.
    const marker = (await db.query<{ x: string }>('SELECT txid_current()::text AS x')).rows[0]!.x;
    await waitFor(
      async () =>
        (await db.query<{ ok: boolean }>('SELECT txid_snapshot_xmin(txid_current_snapshot()) > $1::bigint AS ok', [marker])).rows[0]!.ok,
      { message: 'every transaction older than the claim to end' },
    );

    const ids = claimed.rows.map((r) => r.id);
    const tokens = claimed.rows.map((r) => r.lease_token);
    const done = await db.query<{ ids: string[] | null }>(queries().completeMany(ids.length).text, [ids, tokens, null]);
    expect(done.rows[0]!.ids).toBeNull();
    const afterComplete = await pages(queue);

    // Full pages (fillfactor 100) would send nearly every new version elsewhere.
    expect(stayed(inserted, afterClaim)).toBeGreaterThan(JOBS * 0.4);
    expect(stayed(afterClaim, afterComplete)).toBeGreaterThan(JOBS * 0.4);
    // And the table grew by well under the two extra versions per job that other pages would hold.
    const r = await db.query<{ n: number }>(`SELECT pg_relation_size('baton.jobs')::int / current_setting('block_size')::int AS n`);
    expect(r.rows[0]!.n).toBeLessThan(tablePages * 2);
  });
});
