// SQL fragments the flow statements share (flow-claim.ts, flow-admin.ts): the loose index walk
// of a queue's distinct tenants or keys, the fair pick, key limits by pattern, and bucket refill.
//
// Fair claim: a weighted round-robin across the tenants of a queue. The claimer keeps a cursor
// (the tenant served last and how much of its slice it used); a claim walks the distinct tenants
// from there (wrapping around, one index probe each, at most $2 of them), gives tenant t the
// slice weight(t) per round, and takes jobs in order (round, tenant position, job rank), so job
// k of tenant t is in round floor((k + used_t) / weight_t). Within a tenant, jobs stay in claim
// order (priority DESC, run_at, id). Each tenant's jobs are locked with SKIP LOCKED where they
// are picked, so claimers on other processes pass each other as in the FIFO claim.

/** The states of a job that holds a lease: what caps count. */
export const LIVE = `('leased', 'running')`;

/**
 * Up to `max` distinct values of `col` among a queue's pending rows matching `pred`, from
 * `cursor` (inclusive) upwards, then wrapping around below it: a loose index scan, one probe per
 * value. Columns (v, pos).
 */
export function distinctFrom(jobs: string, col: string, pred: string, cursor: string, max: string): string {
  const next = (cond: string) =>
    `(SELECT ${col} FROM ${jobs} WHERE state = 'pending' AND ${pred} AND queue = $1 AND ${cond} ORDER BY ${col} LIMIT 1)`;
  return `hi(v, pos) AS (
      SELECT ${next(`${col} >= ${cursor}`)}, 1
      UNION ALL
      SELECT ${next(`${col} > hi.v`)}, hi.pos + 1 FROM hi WHERE hi.v IS NOT NULL AND hi.pos < ${max}
    ), lo(v, pos) AS (
      SELECT ${next(`${col} < ${cursor}`)}, (SELECT count(v) FROM hi) + 1
      WHERE (SELECT count(v) FROM hi) < ${max}
      UNION ALL
      SELECT ${next(`${col} > lo.v AND ${col} < ${cursor}`)}, lo.pos + 1 FROM lo WHERE lo.v IS NOT NULL AND lo.pos < ${max}
    )`;
}

/**
 * The fair pick of unkeyed jobs, as CTEs ending in `fair(id, tenant_id, rnd, pos, k, used)`:
 * $1 queue, `budget` jobs at most, cursor `cur` (tenant) and `used` (of its slice).
 */
export function fairPick(schema: string, budget: string, cur: string, used: string): string {
  const jobs = `${schema}.jobs`;
  const pred = 'concurrency_key IS NULL';
  // One tenant more than the budget: the cursor's tenant may have used its slice already.
  return `${distinctFrom(jobs, 'tenant_id', pred, cur, `(${budget} + 1)`)},
    tenants AS (
      SELECT x.v AS tenant_id, x.pos, COALESCE(w.weight, 1) AS slice,
             CASE WHEN x.v = ${cur} THEN least(${used}, COALESCE(w.weight, 1)) ELSE 0 END AS off
      FROM (SELECT * FROM hi UNION ALL SELECT * FROM lo) x
      LEFT JOIN ${schema}.tenant_weights w ON w.tenant_id = x.v
      WHERE x.v IS NOT NULL
    ),
    rounds AS (SELECT ceil((${budget} + COALESCE(sum(off), 0))::float8 / greatest(sum(slice), 1))::int + 1 AS r FROM tenants),
    fair AS (
      SELECT c.id, tn.tenant_id, (c.k + tn.off) / tn.slice AS rnd, tn.pos, c.k, (c.k + tn.off) % tn.slice + 1 AS used
      FROM tenants tn CROSS JOIN LATERAL (
        SELECT l.id, (row_number() OVER ())::int - 1 AS k FROM (
          SELECT id FROM ${jobs}
          WHERE state = 'pending' AND ${pred} AND queue = $1 AND tenant_id = tn.tenant_id AND run_at <= now()
          ORDER BY priority DESC, run_at, id
          LIMIT least(${budget}, tn.slice * (SELECT r FROM rounds))
          FOR UPDATE SKIP LOCKED
        ) l
      ) c
    )`;
}

/** The next cursor: the tenant of the last job taken in round-robin order, and its slice used. */
export const cursorColumns = (picked: string) =>
  `(SELECT tenant_id FROM ${picked} ORDER BY rnd DESC, pos DESC, k DESC LIMIT 1) AS cursor_tenant,
   (SELECT used FROM ${picked} ORDER BY rnd DESC, pos DESC, k DESC LIMIT 1) AS cursor_used`;

/** Key pattern match: the exact key first, then the longest prefix pattern ('vendor:*'). */
export const keyLimit = (schema: string, key: string, having: string, col: string) =>
  `(SELECT f.${col} FROM ${schema}.flow_keys f
     WHERE f.${having} IS NOT NULL AND (f.pattern = ${key} OR (right(f.pattern, 1) = '*' AND starts_with(${key}, left(f.pattern, -1))))
     ORDER BY f.pattern = ${key} DESC, length(f.pattern) DESC LIMIT 1)`;

/**
 * Tokens of a bucket at `now`: refilled at `rate` per `period` ms since `at`, capped at `rate`.
 * The claim passes the clock after its locks were taken, not the transaction's start: claimers
 * take the lock in another order than they began, and a refill time that went backwards
 * would credit the same interval twice.
 */
export const refill = (tokens: string, at: string, rate: string, period: string, now = 'now()') =>
  `least(${rate}::float8, COALESCE(${tokens}, ${rate}::float8)
     + greatest(0, date_part('epoch', ${now} - COALESCE(${at}, ${now})) * 1000) * ${rate} / ${period})`;
