// SQL fragments that several statement files share (job-lease.ts, job-admin.ts, flow-claim.ts,
// job-read.ts, job-list.ts, workflow.ts): one text each, so every claim writes its leases the
// same way and every move into or out of a finished state keeps finished_counts and
// finished_blocks in step.

import { LIST_INLINE_MAX_BYTES, LIST_MESSAGE_MAX_CHARS } from '../../../types/job.ts';

/** The states in which a job's lease is held. */
export const LIVE = `('leased', 'running')`;

/** A timestamptz as float8 epoch milliseconds (microseconds kept as the fraction). */
const epochMs = (col: string) => `date_part('epoch', ${col}) * 1000`;

/**
 * A listing row (JobSummary) of alias `j`: every scalar column, and the bulky ones bounded.
 * pg_column_size reads a large value's TOAST pointer, not the value, so a page of jobs with
 * megabyte payloads costs what its row count says, in the database and in the daemon.
 */
export const summaryColumns = (j: string) => `${j}.id, ${j}.tenant_id, ${j}.queue, ${j}.job_type, ${j}.priority, ${j}.state,
    ${j}.run_at, ${j}.attempt, ${j}.max_attempts, ${j}.lease_token, ${j}.lease_owner, ${j}.lease_expires_at,
    ${j}.idempotency_key, ${j}.dead_letter_reason, ${j}.replay_count, ${j}.created_at, ${j}.started_at,
    ${j}.finished_at, ${j}.updated_at, ${j}.trace_context, ${j}.cancel_requested_at, ${j}.progress,
    CASE WHEN pg_column_size(${j}.payload) <= ${LIST_INLINE_MAX_BYTES} THEN ${j}.payload END AS payload,
    pg_column_size(${j}.payload) AS payload_bytes,
    pg_column_size(${j}.payload) <= ${LIST_INLINE_MAX_BYTES} AS payload_inline,
    CASE WHEN pg_column_size(${j}.result) <= ${LIST_INLINE_MAX_BYTES} THEN ${j}.result END AS result,
    COALESCE(pg_column_size(${j}.result), 0) AS result_bytes,
    COALESCE(pg_column_size(${j}.result) <= ${LIST_INLINE_MAX_BYTES}, true) AS result_inline,
    jsonb_array_length(${j}.errors) AS error_count,
    CASE WHEN ${j}.last_error IS NOT NULL THEN (${j}.last_error - 'stack')
      || jsonb_build_object('message', left(${j}.last_error->>'message', ${LIST_MESSAGE_MAX_CHARS})) END AS last_error`;

/**
 * Adds `sign` x the rows of `from` (columns queue and state) in a finished state to the
 * finished count of their queue and state, in this session's shard (see migration 0009): every
 * statement that moves a job into or out of a finished state runs it as a CTE. Rows in key
 * order: two statements of one shard lock counter rows in the same order, so they cannot deadlock.
 */
export const countFinishedSql = (
  schema: string,
  from: string,
  sign: '' | '-',
) => `INSERT INTO ${schema}.finished_counts AS s (queue, state, shard, n)
          SELECT queue, state, pg_backend_pid() % 32, ${sign}count(*) FROM ${from}
          WHERE state IN ('succeeded', 'dead_lettered', 'cancelled') GROUP BY queue, state ORDER BY queue, state
          ON CONFLICT (queue, state, shard) DO UPDATE SET n = s.n + excluded.n`;

/** Ids per block of finished_blocks (migration 0024, which writes the same shift): block = id >> 8. */
export const FINISHED_BLOCK_SHIFT = 8;

/**
 * CTEs `counted` and `blocked`, for a statement that moves the rows of `from` (columns id, queue
 * and state) into a finished state: counts them (countFinishedSql) and records their blocks in
 * finished_blocks, which listings by queue read (migration 0024). The blocks are made distinct
 * before the probe, and the probe stays a probe of the map's index per block (each OFFSET 0
 * keeps the planner from turning it into a join, which may hash a scan of the whole map): a
 * batch of completions probes once per block it finished jobs in, and writes only for a block
 * new to its queue. `returning`: a RETURNING clause for the rows it inserted (the completion's).
 */
export const recordFinishedSql = (schema: string, from: string, returning = '') => `counted AS (${countFinishedSql(schema, from, '')}),
        blocked AS (INSERT INTO ${schema}.finished_blocks (queue, block)
          SELECT d.queue, d.block FROM (
            SELECT DISTINCT f.queue, f.id >> ${FINISHED_BLOCK_SHIFT} AS block FROM ${from} f
            WHERE f.state IN ('succeeded', 'dead_lettered', 'cancelled') OFFSET 0) d
          WHERE NOT EXISTS (SELECT 1 FROM ${schema}.finished_blocks b WHERE b.queue = d.queue AND b.block = d.block OFFSET 0)${returning})`;

/**
 * Claims of at most this many jobs, and lease writes of at most this many leases, send a
 * statement written for that very number (see claimLimit and batchIds), so PostgreSQL plans
 * each of them once per connection.
 */
export const SIZE_IN_TEXT_MAX = 32;

/**
 * The LIMIT of a claim statement: `$2`, or the number of jobs asked for when it is an integer
 * from 1 to SIZE_IN_TEXT_MAX. With `LIMIT $2` a generic plan is costed for a tenth of the
 * queue, far above a custom plan's cost, so once the table has statistics PostgreSQL plans the
 * named claim at every execution: about as long as running it (EXPLAIN here: 0.21 ms planning
 * and 0.22 ms execution for a claim of 10). With the number in the text the generic plan costs
 * what the custom ones do, and is kept after the fifth execution. $2 stays in the text, as a
 * test of the number asked for that a plan evaluates once, so every claim takes the same
 * parameters.
 */
export function claimLimit(n?: number): { limit: string; check: string } {
  if (n === undefined) return { limit: '$2', check: '' };
  return { limit: String(sizeInText(n)), check: ` AND $2::integer = ${n}` };
}

/**
 * The ids of a lease write's batch ($1) as `id = ANY (...)` of alias j: the array, or for a
 * batch of n leases (1 to SIZE_IN_TEXT_MAX) its n elements written out. A generic plan guesses
 * 10 elements for an array parameter, and counts those written out, so the generic plan of a
 * small batch costs what its custom plans do and the cache keeps it: a statement sent unnamed
 * is planned at every execution instead (0.13 ms for a completion of 10 in a drain here, more
 * than half its execution). The range between the least and the greatest id is redundant for
 * the result: a generic plan cached while the table was new would otherwise read it whole (as
 * the claim's min/max, test/db/plans-fresh.test.ts). Larger batches stay unnamed: a generic
 * plan would not hash the token list, and scans it once per row (see job-lease.ts).
 */
export function batchIds(n?: number): string {
  if (n === undefined) return 'j.id = ANY ($1::bigint[])';
  const ids = Array.from({ length: sizeInText(n) }, (_, i) => `($1::bigint[])[${i + 1}]`).join(', ');
  return `j.id = ANY (ARRAY[${ids}]) AND j.id BETWEEN least(${ids}) AND greatest(${ids})`;
}

function sizeInText(n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > SIZE_IN_TEXT_MAX) throw new Error(`a size in the text must be 1..${SIZE_IN_TEXT_MAX}`);
  return n;
}

/**
 * One statement per size (see claimLimit and batchIds), built when first asked for: `build(n)`
 * for a size n up to SIZE_IN_TEXT_MAX, `build()` (the open form, also `.open`) above it.
 */
export function bySize<Q>(build: (n?: number) => Q): ((n: number) => Q) & { open: Q } {
  const fixed: Q[] = [];
  const open = build();
  const of = (n: number) => {
    if (!Number.isInteger(n) || n < 1 || n > SIZE_IN_TEXT_MAX) return open;
    fixed[n] ??= build(n);
    return fixed[n];
  };
  return Object.assign(of, { open });
}

/**
 * Whether queue $1 has a gate (migration 0032): `closed` reads the gates that close it to the
 * plain and FIFO claims (paused, flow-controlled); `any` also a mark of another tenant's jobs.
 */
export const gateProbe = (schema: string, which: 'closed' | 'any') =>
  `EXISTS (SELECT 1 FROM ${schema}.queue_gates WHERE queue = $1${which === 'closed' ? " AND reason IN ('paused', 'controlled')" : ''})`;

/**
 * The FIFO claim: queue $1's due pending jobs in claim order, up to $2, unless a gate says the
 * queue is paused or flow-controlled (`gates` 'any': or has held another tenant's jobs), as
 * leases ($3-$5 as claimUpdateSql). `extra`: more conditions on the picked rows (the plain
 * claim of queries/flow-claim.ts adds its own). `n`: see claimLimit.
 */
export const fifoClaimSql = (schema: string, extra = '', n?: number, gates: 'closed' | 'any' = 'closed') => {
  const { limit, check } = claimLimit(n);
  return `WITH picked AS (
          SELECT id FROM ${schema}.jobs
          WHERE state = 'pending' AND queue = $1 AND run_at <= now()${check}
            AND NOT ${gateProbe(schema, gates)}${extra}
          ORDER BY priority DESC, run_at, id
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        )
        ${claimUpdateSql(schema, 'picked')}`;
};

/**
 * How far apart the tokens of two timelines start. A token is the sequence's value plus
 * (timeline - 1) * TIMELINE_TOKEN_STEP: a promoted standby (timeline + 1) hands out tokens above
 * every one its old primary handed out as long as that primary's sequence ran less than this
 * ahead of what reached the standby (fewer than 2^12 unreplicated token floors, TOKEN_FLOOR_STEP
 * each). Without it a standby that missed some claims, or a session's floor, under asynchronous
 * replication or asynchronous commit would hand the same token out again, and a zombie worker's
 * outcome write would match (docs/scaling.md#fencing-across-a-failover). A server never
 * promoted is on timeline 1: its tokens are the sequence's values.
 */
export const TIMELINE_TOKEN_STEP = 2 ** 40;

/**
 * The current timeline's token offset, evaluated once per statement. The WAL file name of the
 * insert position starts with the timeline in hex (PostgreSQL 15 names it by the insertion
 * timeline); pg_current_wal_lsn needs no privilege and fails on a standby, where nothing claims.
 */
export const TIMELINE_TOKEN_OFFSET = `(SELECT (('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint - 1) * ${TIMELINE_TOKEN_STEP})`;

/**
 * The claim's write: the rows of CTE `picked` (column id) become leases with fresh tokens, and
 * come back as ClaimRow columns. `attempt >= 0` holds for every row (a CHECK): like the id bounds
 * it is there for a generic plan cached while the table was new, where a sequential scan and the
 * primary key cost about the same; its filter cost on every row of a scan keeps the plan on the
 * key (the progress column of migration 0031 had tipped that tie; test/db/plans-fresh.test.ts). Shared by every claim statement (FIFO, fair, flow-controlled):
 * $3 owner, $4 into running, $5 lease ms. See `claim` in job-lease.ts for the why of each clause.
 */
export function claimUpdateSql(schema: string, picked: string, leaseFrom = 'now()'): string {
  const jobs = `${schema}.jobs`;
  const tokenSeq = `'${schema}.lease_token_seq'`;
  // Set on a session by tokenFloor, naming the sequence it advanced (its oid).
  const floorMark = `${tokenSeq}::regclass::oid::text`;
  return `UPDATE ${jobs} j SET
          state = CASE WHEN $4::boolean THEN 'running' ELSE 'leased' END,
          lease_token = nextval(${tokenSeq}) + ${TIMELINE_TOKEN_OFFSET},
          lease_owner = $3,
          lease_expires_at = ${leaseFrom} + make_interval(secs => $5::double precision / 1000.0),
          attempt = j.attempt + 1,
          started_at = CASE WHEN $4::boolean THEN now() ELSE NULL END,
          updated_at = now()
        WHERE j.id = ANY (ARRAY(SELECT id FROM ${picked}))
          AND j.id BETWEEN (SELECT min(id) FROM ${picked}) AND (SELECT max(id) FROM ${picked})
          AND j.attempt >= 0
          AND (SELECT set_config('synchronous_commit',
            CASE WHEN current_setting('baton.token_floor', true) = ${floorMark} THEN 'off'
              ELSE current_setting('synchronous_commit') END, true)) IS NOT NULL
        RETURNING j.id::text, j.tenant_id, j.job_type, j.payload, j.priority, j.attempt, j.max_attempts,
          j.lease_token::text, j.idempotency_key, j.last_error, NULLIF(j.errors, '[]') AS errors, j.replay_count,
          ${epochMs('j.run_at')} AS run_at_ms, ${epochMs('j.created_at')} AS created_at_ms, ${epochMs('now()')} AS now_ms,
          j.trace_context`;
}
