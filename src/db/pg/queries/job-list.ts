// Listings beyond the default (job-read.ts `list`, newest first): sorted by another key and/or
// filtered by creation time or by whether the run-at has come. Each reads at most what it
// returns, or a bounded window of the newest matching jobs (types/job-sort.ts):
// - id and createdAt (defined as the id order: ids grow with creation) walk the primary key;
// - creation-time bounds become an id range, found by bisecting the primary key (`idFrom`),
//   and the exact created_at test still applies inside it;
// - `due` of pending jobs reads the pending jobs (live work) whole through the claim index;
// - another sort key, or `due` of other states, sorts the newest JOB_SORT_WINDOW matching jobs.
// One statement per sort key and direction, built from a fixed table of columns, so no text
// from a request ever reaches the SQL. Sent unnamed (as job-read.ts's listings), so each is
// planned with its values: a generic plan knows neither the id range nor the filters, and
// (before any ANALYZE) reads the table whole and sorts it. Measured at 100k finished rows in
// test/db/plans-history.test.ts (rows visited stay under its budget); before, every sort but
// the default read and sorted every matching row (270-430 ms at 1M finished rows).

import { JOB_SORT_KEYS, JOB_SORT_WINDOW, type JobSortKey, type SortOrder } from '../../../types/job-sort.ts';
import { summaryColumns } from './job-fragments.ts';
import { statementName } from './statement-name.ts';

/** Output columns of summaryColumns (the window's alias `w`), by sort key. */
const COLUMN: Record<JobSortKey, string> = {
  id: 'id',
  createdAt: 'id',
  updatedAt: 'updated_at',
  runAt: 'run_at',
  state: 'state',
  jobType: 'job_type',
  queue: 'queue',
  tenantId: 'tenant_id',
  attempt: 'attempt',
  priority: 'priority',
};

/** The bounds of an id range that leave it open (ids are positive). */
export const ID_RANGE_OPEN = { from: '0', before: '9223372036854775807' } as const;

/**
 * $1 state, $2 tenant, $3 queue, $4 job type, $5 created at or after, $6 created before,
 * $7 id at or after, $8 id before (the creation bounds' id range, ID_RANGE_OPEN when none).
 */
const where = `($1::text IS NULL OR j.state = $1) AND ($2::text IS NULL OR j.tenant_id = $2)
  AND ($3::text IS NULL OR j.queue = $3) AND ($4::text IS NULL OR j.job_type = $4)
  AND ($5::timestamptz IS NULL OR j.created_at >= $5) AND ($6::timestamptz IS NULL OR j.created_at < $6)
  AND j.id >= $7::bigint AND j.id < $8::bigint`;

/** `due` of the window's rows: run_at has come by the database's clock (true) or lies ahead (false). */
const dueTest = (param: string) => `(${param}::boolean IS NULL OR (w.run_at <= now()) = ${param}::boolean)`;

const orderBy = (key: JobSortKey, order: SortOrder) =>
  COLUMN[key] === 'id' ? `w.id ${order}` : `w.${COLUMN[key]} ${order}, w.id ${order}`;

export function jobListQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  /** The newest JOB_SORT_WINDOW jobs matching `where` in the id range: the primary key backwards. */
  const windowed = `SELECT ${summaryColumns('j')} FROM ${jobs} j WHERE ${where} ORDER BY j.id DESC LIMIT ${JOB_SORT_WINDOW}`;
  const byId = {} as Record<SortOrder, { text: string }>;
  const window = {} as Record<`${JobSortKey}:${SortOrder}`, { text: string }>;
  for (const order of ['asc', 'desc'] as const) {
    byId[order] = {
      text: `SELECT ${summaryColumns('j')} FROM ${jobs} j WHERE ${where} ORDER BY j.id ${order} LIMIT $9 OFFSET $10`,
    };
    for (const key of JOB_SORT_KEYS) {
      window[`${key}:${order}`] = {
        text: `SELECT * FROM (${windowed}) w WHERE ${dueTest('$9')} ORDER BY ${orderBy(key, order)} LIMIT $10 OFFSET $11`,
      };
    }
  }
  const overs = new Map<string, { text: string }>();
  return {
    /**
     * The first id whose row was created at or after $1, or one past the last id: a bisection
     * of the primary key (ids grow with creation), about log2(ids) index probes, never a scan.
     * A job whose transaction began before the bound but took its id after a newer job's may
     * fall on the other side of it (the exact created_at test still applies to every row).
     */
    idFrom: {
      name: statementName(schema, `job_id_from_created_at`),
      text: `WITH RECURSIVE b(lo, hi) AS (
          SELECT coalesce((SELECT min(id) FROM ${jobs}), 1), coalesce((SELECT max(id) FROM ${jobs}), 0) + 1
          UNION ALL
          SELECT CASE WHEN p.created_at >= $1::timestamptz THEN b.lo ELSE p.id + 1 END,
                 CASE WHEN p.created_at >= $1::timestamptz THEN b.lo + (b.hi - b.lo) / 2 ELSE b.hi END
          FROM b CROSS JOIN LATERAL (
            SELECT id, created_at FROM ${jobs} WHERE id >= b.lo + (b.hi - b.lo) / 2 ORDER BY id LIMIT 1) p
          WHERE b.lo < b.hi)
        SELECT max(lo)::text AS id FROM b`,
    },
    /** A page in id order (createdAt's too) within the id range. Parameters: where's, $9 limit, $10 offset. */
    byId,
    /** A page of the window sorted by a key. Parameters: where's, $9 due, $10 limit, $11 offset. */
    window,
    /**
     * A page of the window sorted by a key, the window read by a listing of job-read.ts (its
     * text, with its own parameters: the filters, then JOB_SORT_WINDOW and offset 0), then
     * `due`, limit and offset.
     */
    windowOver(list: { text: string }, params: number, key: JobSortKey, order: SortOrder) {
      const k = `${key}:${order}:${list.text}`;
      let q = overs.get(k);
      if (!q) {
        const [due, limit, offset] = [`$${params + 1}`, `$${params + 2}::int`, `$${params + 3}::int`];
        q = {
          text: `SELECT * FROM (${list.text}) w WHERE ${dueTest(due)} ORDER BY ${orderBy(key, order)} LIMIT ${limit} OFFSET ${offset}`,
        };
        overs.set(k, q);
      }
      return q;
    },
    /**
     * Pending jobs by `due` ($9), in id order: the pending jobs matching where's read whole through
     * the claim index (MATERIALIZED: no walk of the primary key looking for them, as job-read.ts's
     * live parts), then the page. Parameters: where's, $9 due, $10 limit, $11 offset.
     */
    pendingDue: Object.fromEntries(
      (['asc', 'desc'] as const).map((order) => [
        order,
        {
          text: `WITH p AS MATERIALIZED (SELECT j.id, j.run_at FROM ${jobs} j WHERE j.state = 'pending' AND ${where})
        SELECT ${summaryColumns('j')} FROM ${jobs} j
        WHERE j.id = ANY (ARRAY(SELECT id FROM p WHERE (p.run_at <= now()) = $9::boolean ORDER BY id ${order} LIMIT $10::int + $11::int))
        ORDER BY j.id ${order} LIMIT $10::int OFFSET $11::int`,
        },
      ]),
    ) as Record<SortOrder, { text: string }>,
    /** Pending jobs by `due` ($9) matching where's, counted up to a cap ($10), through the claim index. */
    countPendingDue: {
      text: `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${jobs} j
        WHERE j.state = 'pending' AND ${where} AND (j.run_at <= now()) = $9::boolean LIMIT $10) c`,
    },
    /** Rows matching where's, counted up to a cap ($9): the id range through the primary key. */
    countCapped: {
      text: `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${jobs} j WHERE ${where} LIMIT $9) c`,
    },
    /** Rows of the window whose run-at has come (or not, $9). */
    countWindow: {
      text: `SELECT count(*)::int AS n FROM (${windowed}) w WHERE ${dueTest('$9')}`,
    },
    /** countWindow over a listing of job-read.ts (see windowOver); $params+1 due. */
    countOver(list: { text: string }, params: number) {
      const k = `count:${list.text}`;
      let q = overs.get(k);
      if (!q) {
        q = { text: `SELECT count(*)::int AS n FROM (${list.text}) w WHERE ${dueTest(`$${params + 1}`)}` };
        overs.set(k, q);
      }
      return q;
    },
  } as const;
}

export type JobListQueries = ReturnType<typeof jobListQueries>;
