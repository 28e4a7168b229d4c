// Named queries for the jobs table family, built once per engine from the
// quoted schema. Every outcome write (start, heartbeat, complete, fail, release)
// is conditional on the lease token: a stale token matches zero rows.
//
// Lease writes take a batch as parallel arrays ($1 ids, $2 tokens, then per-lease values)
// and find their rows by primary key alone (id = ANY($1)), with no join for the planner to
// get wrong. A row is fenced in when its current token is one of $2: tokens come from one
// sequence and are never reused, so a job's current token can only be in $2 if it is the
// token that this batch holds for that very job. Per-lease values are picked by the row's
// position in $2 (leasePos), a linear search per row: with results on every row of 500-row
// completes it was about 13% of PostgreSQL's CPU in a drain, so a batch without values
// sends none (the executor passes NULL for the array).
// These statements carry no name, so PostgreSQL plans each execution with its arrays in
// hand: it hashes the token list (a generic plan would scan it once per row, quadratic in
// the batch: 81 ms instead of 32 for a heartbeat of 5,000 leases) and sizes the index scan.

import { LIST_INLINE_MAX_BYTES, LIST_MESSAGE_MAX_CHARS } from '../../../types/job.ts';
import { leaderFenceSql } from './leader.ts';

/** Error history kept per job (oldest entries dropped first). */
export const ERROR_HISTORY_LIMIT = 100;

/**
 * How far a session advances the token sequence before its claims may commit without waiting
 * for the WAL flush (see tokenFloor). Safe while fewer claims than this are handed out between
 * two WAL flushes: one happens at every synchronous commit, every wal_writer_delay and every
 * finished WAL segment, and each claim writes over 100 bytes of WAL, so a 1 GB segment holds
 * fewer than 2^24 of them. Leaves room for 2^35 session starts in the bigint sequence.
 */
export const TOKEN_FLOOR_STEP = 2 ** 28;

const LIVE = `('leased', 'running')`;
/**
 * The job has a cancel request (migration 0020): whatever would have sent it back to pending
 * (a retry, a release, a reaped lease) ends it as cancelled instead, and a failed attempt ends
 * it as cancelled whatever the failure. Read under the row's lock by each outcome write.
 */
export const CANCEL_REQUESTED = 'j.cancel_requested_at IS NOT NULL';

/** A timestamptz as float8 epoch milliseconds (microseconds kept as the fraction). */
const epochMs = (col: string) => `date_part('epoch', ${col}) * 1000`;

/** The token condition of every lease write (the chaos suite strips it to prove it can fail). */
export const TOKEN_FENCE = `AND j.lease_token = ANY ($2::bigint[])`;
/** The row's lease in the batch: a row is fenced in only when its token is in $2. */
const FENCED = `j.id = ANY ($1::bigint[]) ${TOKEN_FENCE}`;
/** Position of the row's lease in the batch arrays (1-based). */
const leasePos = `array_position($2::bigint[], j.lease_token)`;
/**
 * Runs a lease write and answers with one row: ids NULL when every lease in $1 was written
 * (the common case: nothing to send back or parse), else the ids that were. A batch with a
 * repeated id can never count as complete, so it is answered by its ids.
 */
const acceptedIds = (
  update: string,
  recorded = '',
) => `WITH w AS (${update} RETURNING j.id${recorded ? ', j.queue, j.state' : ''})${recorded ? `, ${recorded}` : ''}
        SELECT CASE WHEN count(*) = cardinality($1::bigint[]) THEN NULL ELSE COALESCE(array_agg(w.id), '{}') END AS ids FROM w`;

/**
 * A listing row (JobSummary) of alias `j`: every scalar column, and the bulky ones bounded.
 * pg_column_size reads a large value's TOAST pointer, not the value, so a page of jobs with
 * megabyte payloads costs what its row count says, in the database and in the daemon.
 */
export const summaryColumns = (j: string) => `${j}.id, ${j}.tenant_id, ${j}.queue, ${j}.job_type, ${j}.priority, ${j}.state,
    ${j}.run_at, ${j}.attempt, ${j}.max_attempts, ${j}.lease_token, ${j}.lease_owner, ${j}.lease_expires_at,
    ${j}.idempotency_key, ${j}.dead_letter_reason, ${j}.replay_count, ${j}.created_at, ${j}.started_at,
    ${j}.finished_at, ${j}.updated_at, ${j}.trace_context, ${j}.cancel_requested_at,
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
 * new to its queue.
 */
export const recordFinishedSql = (schema: string, from: string) => `counted AS (${countFinishedSql(schema, from, '')}),
        blocked AS (INSERT INTO ${schema}.finished_blocks (queue, block)
          SELECT d.queue, d.block FROM (
            SELECT DISTINCT f.queue, f.id >> ${FINISHED_BLOCK_SHIFT} AS block FROM ${from} f
            WHERE f.state IN ('succeeded', 'dead_lettered', 'cancelled') OFFSET 0) d
          WHERE NOT EXISTS (SELECT 1 FROM ${schema}.finished_blocks b WHERE b.queue = d.queue AND b.block = d.block OFFSET 0))`;

/**
 * The FIFO claim: queue $1's due pending jobs in claim order, up to $2, unless the queue is
 * paused or flow-controlled, as leases ($3-$5 as claimUpdateSql). `extra`: more conditions on
 * the picked rows (the plain claim of queries/flow-claim.ts adds its own).
 */
export const fifoClaimSql = (schema: string, extra = '') => `WITH picked AS (
          SELECT id FROM ${schema}.jobs
          WHERE state = 'pending' AND queue = $1 AND run_at <= now()
            AND NOT EXISTS (SELECT 1 FROM ${schema}.paused_queues WHERE queue = $1)
            AND NOT EXISTS (SELECT 1 FROM ${schema}.flow_queues WHERE queue = $1)${extra}
          ORDER BY priority DESC, run_at, id
          LIMIT $2
          FOR UPDATE SKIP LOCKED
        )
        ${claimUpdateSql(schema, 'picked')}`;

/**
 * The claim's write: the rows of CTE `picked` (column id) become leases with fresh tokens, and
 * come back as ClaimRow columns. Shared by every claim statement (FIFO, fair, flow-controlled):
 * $3 owner, $4 into running, $5 lease ms. See `claim` below for the why of each clause.
 */
export function claimUpdateSql(schema: string, picked: string, leaseFrom = 'now()'): string {
  const jobs = `${schema}.jobs`;
  const tokenSeq = `'${schema}.lease_token_seq'`;
  // Set on a session by tokenFloor, naming the sequence it advanced (its oid).
  const floorMark = `${tokenSeq}::regclass::oid::text`;
  return `UPDATE ${jobs} j SET
          state = CASE WHEN $4::boolean THEN 'running' ELSE 'leased' END,
          lease_token = nextval(${tokenSeq}),
          lease_owner = $3,
          lease_expires_at = ${leaseFrom} + make_interval(secs => $5::double precision / 1000.0),
          attempt = j.attempt + 1,
          started_at = CASE WHEN $4::boolean THEN now() ELSE NULL END,
          updated_at = now()
        WHERE j.id = ANY (ARRAY(SELECT id FROM ${picked}))
          AND j.id BETWEEN (SELECT min(id) FROM ${picked}) AND (SELECT max(id) FROM ${picked})
          AND (SELECT set_config('synchronous_commit',
            CASE WHEN current_setting('baton.token_floor', true) = ${floorMark} THEN 'off'
              ELSE current_setting('synchronous_commit') END, true)) IS NOT NULL
        RETURNING j.id::text, j.tenant_id, j.job_type, j.payload, j.priority, j.attempt, j.max_attempts,
          j.lease_token::text, j.idempotency_key, j.last_error, NULLIF(j.errors, '[]') AS errors, j.replay_count,
          ${epochMs('j.run_at')} AS run_at_ms, ${epochMs('j.created_at')} AS created_at_ms, ${epochMs('now()')} AS now_ms,
          j.trace_context`;
}

export function jobQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  const tokenSeq = `'${schema}.lease_token_seq'`;
  // Appends one error entry to the history, keeping the newest ERROR_HISTORY_LIMIT.
  const appendError = (entry: string) => `(
    SELECT COALESCE(jsonb_agg(e ORDER BY o), '[]'::jsonb)
    FROM jsonb_array_elements(j.errors || jsonb_build_array(${entry})) WITH ORDINALITY AS h(e, o)
    WHERE o > jsonb_array_length(j.errors) + 1 - ${ERROR_HISTORY_LIMIT})`;

  const countFinished = (from: string, sign: '' | '-') => countFinishedSql(schema, from, sign);
  const recordFinished = (from: string) => recordFinishedSql(schema, from);

  // Inserts a batch in one statement. Rows are read from a jsonb array in input order;
  // a duplicate (tenant_id, idempotency_key) is skipped here and read back by selectByKeys.
  // run_at: an absolute time when given, else now() + delay_ms (database clock).
  const insertSql = `INSERT INTO ${jobs}
          (tenant_id, queue, job_type, payload, priority, run_at, max_attempts, idempotency_key, trace_context,
           concurrency_key, concurrency_limit)
        SELECT x.tenant_id, x.queue, x.job_type, COALESCE(x.payload, 'null'::jsonb), x.priority,
               COALESCE(x.run_at, now() + make_interval(secs => COALESCE(x.delay_ms, 0) / 1000.0)),
               x.max_attempts, x.idempotency_key, x.trace_context, x.concurrency_key, x.concurrency_limit
        FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS a(elem, ord)
        CROSS JOIN LATERAL jsonb_to_record(a.elem) AS x(
          tenant_id text, queue text, job_type text, payload jsonb, priority integer,
          run_at timestamptz, delay_ms double precision, max_attempts integer, idempotency_key text,
          trace_context jsonb, concurrency_key text, concurrency_limit integer)
        ORDER BY a.ord
        ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING *`;

  // failMany's per-lease values: $3 the error entry, $6 whether it is terminal.
  const err = `($3::jsonb[])[${leasePos}]`;
  const terminal = `($6::boolean[])[${leasePos}]`;
  const failEntry = `${err} || jsonb_build_object('at', now())
            || CASE WHEN ${CANCEL_REQUESTED} THEN '{"kind": "cancelled"}'::jsonb ELSE '{}'::jsonb END`;

  const completeSql = (recorded: string) => `WITH w AS (UPDATE ${jobs} j SET
          state = 'succeeded', finished_at = now(), updated_at = now(),
          result = CASE WHEN $3::jsonb[] IS NOT NULL THEN ($3::jsonb[])[${leasePos}] END,
          lease_owner = NULL, lease_expires_at = NULL
        WHERE ${FENCED} AND j.state IN ${LIVE}
        RETURNING j.id, j.queue, j.state),
        ${recorded}
        SELECT CASE WHEN count(*) = cardinality($1::bigint[]) THEN NULL ELSE COALESCE(array_agg(w.id), '{}') END AS ids FROM w`;

  return {
    insertMany: { name: `${schema}.job_insert_many`, text: insertSql },
    // The same insert, plus pg_notify on the channels in $2 when a row was inserted: the
    // notification leaves with the commit of the caller's transaction.
    insertManyNotify: {
      name: `${schema}.job_insert_many_notify`,
      text: `WITH ins AS (${insertSql}),
        notified AS (SELECT pg_notify(c, '') FROM unnest($2::text[]) AS c WHERE EXISTS (SELECT 1 FROM ins))
        SELECT * FROM ins WHERE (SELECT count(*) FROM notified) >= 0`,
    },
    selectByKeys: {
      name: `${schema}.job_select_by_keys`,
      text: `SELECT j.* FROM ${jobs} j
        JOIN unnest($1::text[], $2::text[]) AS k(tenant_id, idempotency_key)
          ON j.tenant_id = k.tenant_id AND j.idempotency_key = k.idempotency_key`,
    },
    notify: {
      name: `${schema}.job_notify`,
      text: `SELECT pg_notify(c, '') FROM unnest($1::text[]) AS c`,
    },

    // The claim: one statement, never more rows than $2 (the free slots). Issues a fresh token
    // per row from the sequence, sets the expiry from the database clock and spends an attempt
    // now, so a handler that kills its process still uses up its budget. The picked ids reach
    // the UPDATE as an array so it finds them through the primary key (a join may hash the
    // whole table). The min/max bounds are redundant for the result: a generic plan cached
    // while the table was new (no statistics) would otherwise find the ids by a sequential
    // scan, and keep doing so as the table grows (test/db/plans-fresh.test.ts). Only the
    // columns a lease needs come back, times as epoch milliseconds (cheap to read, no date
    // parsing), nothing the caller already knows (queue, state, the expiry: now + $5) and an
    // empty error history as NULL; rows come back unordered, the caller restores claim order
    // (priority DESC, run_at, id). Read in array mode: the column order is ClaimRow's. The
    // bigints come as text, which node-postgres hands over as is (an int8 it checks by regex).
    // On a session marked by tokenFloor the claim commits without waiting for the WAL flush
    // (about half its round trip here). A database crash may then forget it: the job is
    // pending again with its attempt unspent, and its handler's outcome writes (synchronous,
    // so they would have made the claim durable first) match no row. Its token is never
    // handed out again, because every session that claims this way started after the crash
    // and advanced the sequence past it in a durable commit.
    // A paused queue (paused_queues, see migration 0010) yields nothing: the NOT EXISTS is one
    // primary-key probe, evaluated once per statement (it depends on $1 alone). So does a
    // flow-controlled queue (flow_queues, migration 0015): its claims go through queries/flow-claim.ts.
    claim: {
      name: `${schema}.job_claim`,
      rowMode: 'array' as const,
      text: fifoClaimSql(schema),
    },
    // Run once per new session of Baton's own pool: advances the token sequence by
    // TOKEN_FLOOR_STEP and marks the session, in one synchronously committed transaction
    // (the xid makes it write a commit record, whose flush carries the setval's WAL).
    // Before migrations have created the sequence it changes nothing and answers mark NULL,
    // without an error (the server would log one, on a daemon's first start). The mark is
    // set only where the setval returned, from the very sequence it advanced: the volatile
    // setval keeps the subquery from being flattened, so `seq` is looked up once.
    tokenFloor: {
      text: `SELECT set_config('synchronous_commit', 'on', true) AS sync, f.floor,
          CASE WHEN f.floor IS NOT NULL THEN pg_current_xact_id()::text END AS xid,
          CASE WHEN f.floor IS NOT NULL THEN set_config('baton.token_floor', f.seq::oid::text, false) END AS mark
        FROM (SELECT s.seq, setval(s.seq, nextval(s.seq) + ${TOKEN_FLOOR_STEP}) AS floor
              FROM to_regclass(${tokenSeq}) AS s(seq)) f`,
    },
    markRunningMany: {
      text: acceptedIds(`UPDATE ${jobs} j SET state = 'running', started_at = now(), updated_at = now()
        WHERE ${FENCED} AND j.state = 'leased'`),
    },
    // Also answers which of the renewed leases have a cancel request (NULL when none, the common
    // case), so the holder aborts their signal at the latest one heartbeat after the request.
    heartbeatMany: {
      text: `WITH w AS (UPDATE ${jobs} j SET
          lease_expires_at = now() + make_interval(secs => $3::double precision / 1000.0),
          updated_at = now()
        WHERE ${FENCED} AND j.state IN ${LIVE}
        RETURNING j.id, ${CANCEL_REQUESTED} AS cancel)
        SELECT CASE WHEN count(*) = cardinality($1::bigint[]) THEN NULL ELSE COALESCE(array_agg(w.id), '{}') END AS ids,
          array_agg(w.id) FILTER (WHERE w.cancel) AS cancel FROM w`,
    },
    // deleteOnSuccess: the job leaves at completion, in the same fenced statement (no result kept).
    completeDeleteMany: {
      text: acceptedIds(`DELETE FROM ${jobs} j WHERE ${FENCED} AND j.state IN ${LIVE}`),
    },
    // $3: one result per lease, or NULL when every result is null (the common case).
    completeMany: { text: completeSql(recordFinished('w')) },
    // The same, for a batch whose every (queue, block) the caller knows to be in finished_blocks
    // (see recorded-blocks.ts): counted only. The block CTE is planned at every execution, which
    // cost a batch of one about as much as running it (bench:sql, completion planning µs/job).
    completeManyBlocksKnown: { text: completeSql(`counted AS (${countFinished('w', '')})`) },
    // Retry with full-jitter exponential backoff resolved in SQL:
    // run_at = now() + random() * min(cap, base * 2^(attempt-1)); dead-letter when the error is
    // terminal or the budget is spent. $4 base ms, $5 cap ms. With a cancel request the attempt's
    // failure ends the job as cancelled (never retried), its error entry of kind 'cancelled'.
    failMany: {
      text: `WITH w AS (UPDATE ${jobs} j SET
          state = CASE WHEN ${CANCEL_REQUESTED} THEN 'cancelled'
                       WHEN ${terminal} OR j.attempt >= j.max_attempts THEN 'dead_lettered' ELSE 'pending' END,
          dead_letter_reason = CASE WHEN ${CANCEL_REQUESTED} THEN NULL
                                    WHEN ${terminal} THEN 'terminal_error'
                                    WHEN j.attempt >= j.max_attempts THEN 'attempts_exhausted' END,
          finished_at = CASE WHEN ${CANCEL_REQUESTED} OR ${terminal} OR j.attempt >= j.max_attempts THEN now() END,
          run_at = CASE WHEN ${CANCEL_REQUESTED} OR ${terminal} OR j.attempt >= j.max_attempts THEN j.run_at
                        ELSE now() + make_interval(secs => random()
                          * least($5::double precision, $4::double precision * power(2::double precision, j.attempt - 1))
                          / 1000.0) END,
          last_error = ${failEntry},
          errors = ${appendError(failEntry)},
          lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
        WHERE ${FENCED} AND j.state IN ${LIVE}
        RETURNING j.id, j.state, j.queue),
        ${recordFinished('w')}
        SELECT id, state FROM w`,
    },
    // Gives back leases this worker holds but never started (graceful stop): attempt refunded
    // when $3 is true. Without the refund the attempt stays spent, so a spent budget
    // dead-letters (like the reaper) instead of letting a claim run past max_attempts. A job
    // with a cancel request is not given back: nothing holds it any more, so it is cancelled
    // (its attempt kept: it was claimed, and may have run).
    releaseMany: {
      text: acceptedIds(
        `UPDATE ${jobs} j SET
          state = CASE WHEN ${CANCEL_REQUESTED} THEN 'cancelled'
                       WHEN NOT $3::boolean AND j.attempt >= j.max_attempts THEN 'dead_lettered' ELSE 'pending' END,
          dead_letter_reason = CASE WHEN NOT ${CANCEL_REQUESTED} AND NOT $3::boolean AND j.attempt >= j.max_attempts
                                    THEN 'attempts_exhausted' END,
          finished_at = CASE WHEN ${CANCEL_REQUESTED} OR (NOT $3::boolean AND j.attempt >= j.max_attempts) THEN now() END,
          attempt = CASE WHEN $3::boolean AND NOT ${CANCEL_REQUESTED} THEN greatest(j.attempt - 1, 0) ELSE j.attempt END,
          lease_owner = NULL, lease_expires_at = NULL, started_at = NULL, updated_at = now()
        WHERE ${FENCED} AND j.state IN ${LIVE}`,
        recordFinished('w'),
      ),
    },
    // The live leases one worker holds, to find those it does not know it holds (a claim that
    // committed but whose reply was lost). Rare (only after a failed claim or release), so it
    // may walk the live-lease index of the whole fleet rather than pay for an owner index on
    // every claim; the ORDER BY keeps the planner on that index as the table grows.
    leasesOwned: {
      name: `${schema}.job_leases_owned`,
      text: `SELECT j.id::text, j.lease_token::text AS token, j.queue FROM ${jobs} j
        WHERE j.lease_expires_at IS NOT NULL AND j.lease_owner = $1 AND j.state IN ${LIVE}
        ORDER BY j.lease_expires_at`,
    },
    // Every token issued so far is at most this (a sequence's last_value counts other
    // sessions' calls, cached or not); read before a process's first claim, it bounds what an
    // earlier process that used the same worker id can have been handed.
    tokenHighWater: {
      name: `${schema}.job_token_high_water`,
      text: `SELECT last_value::text AS v FROM ${schema}.lease_token_seq`,
    },
    // The reaper: live leases past their expiry, or (fast reclaim, $3) owned by a worker whose
    // session has been gone for longer than the grace ($2 ms). Back to pending, or dead-lettered
    // when the budget is spent, or cancelled when the job has a cancel request (no handler holds
    // it any more). Bounded by $1 rows; SKIP LOCKED so reapers never queue.
    // Fast reclaim spares a lease last written (claimed or renewed: updated_at) after its owner
    // was seen gone: that write proves the owner was alive then, e.g. its pool reconnected after a
    // server restart before its presence lock did. Such a lease is left to expire or be renewed.
    // Expired leases are a range of the expiry index that ends at now(), so a sweep with nothing
    // to do reads next to nothing however many leases are live; the owners' leases are looked
    // for only while some worker is gone (the EXISTS is a one-time filter).
    reap: {
      name: `${schema}.job_reap`,
      text: `WITH gone AS (
          SELECT id, gone_since FROM ${schema}.workers
          WHERE $3::boolean AND gone_since IS NOT NULL
            AND gone_since <= now() - make_interval(secs => $2::double precision / 1000.0)
        ), expired AS (
          SELECT j.id FROM ${jobs} j
          WHERE j.state IN ${LIVE} AND j.lease_expires_at <= now()
          ORDER BY j.lease_expires_at
          LIMIT $1
          FOR UPDATE OF j SKIP LOCKED
        ), orphaned AS (
          SELECT j.id FROM ${jobs} j JOIN gone g ON g.id = j.lease_owner
          WHERE EXISTS (SELECT 1 FROM gone)
            AND j.state IN ${LIVE} AND j.lease_expires_at > now() AND j.updated_at < g.gone_since
          ORDER BY j.lease_expires_at
          LIMIT greatest(0, $1 - (SELECT count(*) FROM expired))
          FOR UPDATE OF j SKIP LOCKED
        ), victims AS (
          SELECT id, true AS expired FROM expired
          UNION ALL
          SELECT id, false FROM orphaned
        ), entry AS (
          SELECT v.id, v.expired, jsonb_build_object(
            'attempt', j.attempt, 'token', j.lease_token::text,
            'kind', CASE WHEN v.expired THEN 'lease_expired' ELSE 'worker_gone' END,
            'name', 'LeaseLost',
            'message', CASE WHEN v.expired THEN 'lease expired before the worker recorded an outcome'
                            ELSE 'the lease owner''s database session ended' END,
            'worker', j.lease_owner, 'at', now()) AS err
          FROM victims v JOIN ${jobs} j ON j.id = v.id
        ), reaped AS (UPDATE ${jobs} j SET
          state = CASE WHEN ${CANCEL_REQUESTED} THEN 'cancelled' WHEN j.attempt >= j.max_attempts THEN 'dead_lettered' ELSE 'pending' END,
          dead_letter_reason = CASE WHEN NOT ${CANCEL_REQUESTED} AND j.attempt >= j.max_attempts THEN 'attempts_exhausted' END,
          finished_at = CASE WHEN ${CANCEL_REQUESTED} OR j.attempt >= j.max_attempts THEN now() END,
          lease_owner = NULL, lease_expires_at = NULL, started_at = NULL, updated_at = now(),
          last_error = entry.err,
          errors = ${appendError('entry.err')}
        FROM entry WHERE j.id = entry.id
        RETURNING j.id, j.state, j.queue, entry.expired),
        ${recordFinished('reaped')}
        SELECT id, state, queue, expired FROM reaped`,
    },

    // Retention, one step of its walk over the jobs in id order: from after id $1, $2 rows read
    // at most (whatever their state), through the primary key; deletes the finished ones past
    // their state's age ($3 succeeded, $4 cancelled, $5 dead-lettered, ms; NULL keeps) under the
    // leader's epoch $6. So retention costs a completion no index entry: the walk reads the
    // live jobs it passes too, a bounded step at a time. It stops at the first row created after
    // the youngest age ($7 ms ago): every job created later finished later, so nothing from
    // there on is due; `last` is the last id examined before it and `done` says the walk reached
    // it (or the end). SKIP LOCKED: a job an operator is replaying right now waits for the next
    // walk. It also deletes the finished_blocks rows (migration 0024) of the blocks it has
    // passed whole that hold no job of their queue any more: the block's jobs of that queue
    // (a count over its 256 ids) are all among those it deletes, which this statement still
    // sees. Not closed: a job of such a block that this statement cannot see yet (inserted by a
    // transaction that commits after it began) and that finishes, or was inserted finished,
    // before this statement commits keeps no row; a listing by queue may then miss it.
    purgeScan: {
      name: `${schema}.job_purge_scan`,
      text: `WITH fence AS (${leaderFenceSql(schema, '$6')}),
        scan AS MATERIALIZED (
          SELECT id, created_at FROM ${jobs}
          WHERE id > $1::bigint
          ORDER BY id
          LIMIT $2
        ),
        young AS (SELECT min(id) AS id FROM scan WHERE created_at >= now() - make_interval(secs => $7::double precision / 1000.0)),
        seen AS (SELECT id FROM scan WHERE (SELECT id FROM young) IS NULL OR id < (SELECT id FROM young)),
        victims AS (
          SELECT j.id FROM ${jobs} j
          WHERE j.id = ANY (ARRAY(SELECT id FROM seen)) AND j.finished_at IS NOT NULL AND EXISTS (SELECT 1 FROM fence)
            AND j.finished_at < now() - make_interval(secs => (CASE j.state WHEN 'succeeded' THEN $3::double precision
              WHEN 'cancelled' THEN $4::double precision WHEN 'dead_lettered' THEN $5::double precision END) / 1000.0)
          FOR UPDATE SKIP LOCKED
        )
        , gone AS (DELETE FROM ${jobs} j USING victims v WHERE j.id = v.id AND j.finished_at IS NOT NULL
            RETURNING j.id, j.queue, j.state)
        , counted AS (${countFinished('gone', '-')})
        , gone_blocks AS (SELECT queue, id >> ${FINISHED_BLOCK_SHIFT} AS block, count(*) AS n FROM gone GROUP BY 1, 2)
        , emptied AS (DELETE FROM ${schema}.finished_blocks b
            WHERE b.block >= ($1::bigint >> ${FINISHED_BLOCK_SHIFT})
              AND b.block < (((SELECT max(id) FROM seen) + 1) >> ${FINISHED_BLOCK_SHIFT})
              AND EXISTS (SELECT 1 FROM fence)
              AND (SELECT count(*) FROM ${jobs} j WHERE j.queue = b.queue
                AND j.id >= (b.block << ${FINISHED_BLOCK_SHIFT}) AND j.id < ((b.block + 1) << ${FINISHED_BLOCK_SHIFT}))
                = COALESCE((SELECT g.n FROM gone_blocks g WHERE g.queue = b.queue AND g.block = b.block), 0))
        SELECT (SELECT max(id)::text FROM seen) AS last,
          ((SELECT id FROM young) IS NOT NULL OR (SELECT count(*) FROM scan) < $2) AS done,
          (SELECT COALESCE(json_agg(g), '[]') FROM (
            SELECT queue, state, count(*)::int AS n FROM gone GROUP BY queue, state ORDER BY queue, state) g) AS deleted`,
    },

    // Admin.
    get: { name: `${schema}.job_get`, text: `SELECT * FROM ${jobs} WHERE id = $1` },
    // A read for one tenant: another tenant's job is not read at all, so it costs what an id
    // nobody has costs (no row leaves the server; docs/security.md).
    getInTenant: { name: `${schema}.job_get_in_tenant`, text: `SELECT * FROM ${jobs} WHERE id = $1 AND tenant_id = $2` },
    // The old state is read under the row's lock, so a replayed job leaves its state's count exactly once.
    // A dependent cancelled while it waited still has the edges of its unfinished parents (a
    // finished parent's edges are gone): it goes back to waiting for them, not to pending.
    replay: {
      name: `${schema}.job_replay`,
      text: `WITH old AS (SELECT id, state FROM ${jobs} WHERE id = $1 FOR UPDATE),
        edges AS (SELECT count(*)::int AS n FROM ${schema}.job_dependencies WHERE child_id = $1),
        r AS (UPDATE ${jobs} j SET state = CASE WHEN (SELECT n FROM edges) > 0 THEN 'waiting' ELSE 'pending' END,
          waiting_for = CASE WHEN (SELECT n FROM edges) > 0 THEN (SELECT n FROM edges) END, attempt = 0, run_at = now(),
          replay_count = j.replay_count + 1, dead_letter_reason = NULL, result = NULL, cancel_requested_at = NULL,
          started_at = NULL, finished_at = NULL, updated_at = now()
        FROM old WHERE j.id = old.id AND old.state IN ('succeeded', 'dead_lettered', 'cancelled')
        RETURNING j.*),
        counted AS (${countFinished(`(SELECT r.queue, old.state FROM r JOIN old ON old.id = r.id) x`, '-')})
        SELECT * FROM r`,
    },
    // A pending or waiting job is cancelled at once. A leased or running one is not flipped
    // under its holder (its handler may have done its effect already): the request is recorded
    // (the first time kept), and $2 (the cancel channel) is notified with "id:token" so the
    // holder aborts its signal now; its outcome write then decides the final state (failMany,
    // releaseMany, reap). updated_at is left alone on a live lease: fast reclaim reads it as
    // proof that the lease's owner was alive. Answers the row either way; nothing when the job
    // is finished or unknown.
    cancel: {
      name: `${schema}.job_cancel`,
      text: `WITH r AS (UPDATE ${jobs} j SET
          state = CASE WHEN j.state IN ${LIVE} THEN j.state ELSE 'cancelled' END,
          finished_at = CASE WHEN j.state IN ${LIVE} THEN j.finished_at ELSE now() END,
          cancel_requested_at = CASE WHEN j.state IN ${LIVE} THEN COALESCE(j.cancel_requested_at, now()) END,
          updated_at = CASE WHEN j.state IN ${LIVE} THEN j.updated_at ELSE now() END
        WHERE j.id = $1 AND j.state IN ('pending', 'waiting', 'leased', 'running')
        RETURNING j.*),
        ${recordFinished('r')},
        notified AS (SELECT pg_notify($2, r.id || ':' || r.lease_token) FROM r WHERE r.state IN ${LIVE})
        SELECT * FROM r WHERE (SELECT count(*) FROM notified) >= 0`,
    },
    // "Run now": a pending job becomes due at once; one already due keeps its place (least).
    runNow: {
      name: `${schema}.job_run_now`,
      text: `UPDATE ${jobs} SET run_at = least(run_at, now()), updated_at = now()
        WHERE id = $1 AND state = 'pending'
        RETURNING *`,
    },
    replayDeadLetters: {
      name: `${schema}.job_replay_dead_letters`,
      text: `WITH v AS (
          SELECT id FROM ${jobs}
          WHERE state = 'dead_lettered' AND ($2::text IS NULL OR queue = $2) AND ($3::text IS NULL OR tenant_id = $3)
          ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
        )
        , r AS (UPDATE ${jobs} j SET state = 'pending', attempt = 0, run_at = now(),
          replay_count = j.replay_count + 1, dead_letter_reason = NULL, result = NULL, cancel_requested_at = NULL,
          started_at = NULL, finished_at = NULL, updated_at = now()
        FROM v WHERE j.id = v.id
        RETURNING ${summaryColumns('j')})
        , counted AS (${countFinished(`(SELECT queue, 'dead_lettered' AS state FROM r) x`, '-')})
        SELECT * FROM r`,
    },
  } as const;
}

export type JobQueries = ReturnType<typeof jobQueries>;
