// The jobs table's lease statements: the claim, the token floor, the outcome writes (start,
// heartbeat, complete, fail, release) and the reaper. Every outcome write is conditional on
// the lease token: a stale token matches zero rows.
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
// Completions of a few leases are the exception (batchIds): named, one text per batch size,
// since planning each one cost more than half of running it.

import { batchIds, bySize, countFinishedSql, fifoClaimSql, LIVE, recordFinishedSql, TIMELINE_TOKEN_OFFSET } from './job-fragments.ts';
import { statementName } from './statement-name.ts';

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

/**
 * The job has a cancel request (migration 0020): whatever would have sent it back to pending
 * (a retry, a release, a reaped lease) ends it as cancelled instead, and a failed attempt ends
 * it as cancelled whatever the failure. Read under the row's lock by each outcome write.
 */
export const CANCEL_REQUESTED = 'j.cancel_requested_at IS NOT NULL';

/** The token condition of every lease write (the chaos suite strips it to prove it can fail). */
export const TOKEN_FENCE = `AND j.lease_token = ANY ($2::bigint[])`;
/** The row's lease in the batch: a row is fenced in only when its token is in $2. `n`: see batchIds. */
const fenced = (n?: number) => `${batchIds(n)} ${TOKEN_FENCE}`;
const FENCED = fenced();
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
  answer = '',
) => `WITH w AS (${update} RETURNING j.id${recorded ? ', j.queue, j.state' : ''})${recorded ? `, ${recorded}` : ''}
        SELECT CASE WHEN count(*) = cardinality($1::bigint[]) THEN NULL ELSE COALESCE(array_agg(w.id), '{}') END AS ids${answer} FROM w`;

export function jobLeaseQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  const tokenSeq = `'${schema}.lease_token_seq'`;
  // Appends one error entry to the history, keeping the newest ERROR_HISTORY_LIMIT.
  const appendError = (entry: string) => `(
    SELECT COALESCE(jsonb_agg(e ORDER BY o), '[]'::jsonb)
    FROM jsonb_array_elements(j.errors || jsonb_build_array(${entry})) WITH ORDINALITY AS h(e, o)
    WHERE o > jsonb_array_length(j.errors) + 1 - ${ERROR_HISTORY_LIMIT})`;

  const countFinished = (from: string, sign: '' | '-') => countFinishedSql(schema, from, sign);
  const recordFinished = (from: string) => recordFinishedSql(schema, from);

  // failMany's per-lease values: $3 the error entry, $6 whether it is terminal.
  const err = `($3::jsonb[])[${leasePos}]`;
  const terminal = `($6::boolean[])[${leasePos}]`;
  const failEntry = `${err} || jsonb_build_object('at', now())
            || CASE WHEN ${CANCEL_REQUESTED} THEN '{"kind": "cancelled"}'::jsonb ELSE '{}'::jsonb END`;

  const completeSql = (recorded: string, answer = '', n?: number) =>
    acceptedIds(
      `UPDATE ${jobs} j SET
          state = 'succeeded', finished_at = now(), updated_at = now(),
          result = CASE WHEN $3::jsonb[] IS NOT NULL THEN ($3::jsonb[])[${leasePos}] END,
          lease_owner = NULL, lease_expires_at = NULL
        WHERE ${fenced(n)} AND j.state IN ${LIVE}`,
      recorded,
      answer,
    );
  /** A completion by batch size (bySize): named, so planned once, up to SIZE_IN_TEXT_MAX leases; unnamed above. */
  const completions = (key: string, recorded: string, answer = '') =>
    bySize((n?: number) => ({
      ...(n === undefined ? {} : { name: statementName(schema, `${key}_${n}`) }),
      text: completeSql(recorded, answer, n),
    }));

  return {
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
    // By the number of jobs asked for (bySize: one plan per connection for small claims).
    claim: bySize((n?: number) => ({
      name: statementName(schema, `job_claim${n === undefined ? '' : `_${n}`}`),
      rowMode: 'array' as const,
      text: fifoClaimSql(schema, '', n),
    })),
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
    // The latest progress of each lease ($3, one jsonb per lease), fenced like every lease write:
    // a stale token stores nothing. Sent only when some handler reported (ctx.progress), at most
    // once per heartbeat interval, so a job that never reports costs no statement.
    progressMany: {
      text: acceptedIds(`UPDATE ${jobs} j SET progress = ($3::jsonb[])[${leasePos}], updated_at = now()
        WHERE ${FENCED} AND j.state IN ${LIVE}`),
    },
    // deleteOnSuccess: the job leaves at completion, in the same fenced statement (no result kept).
    completeDeleteMany: {
      text: acceptedIds(`DELETE FROM ${jobs} j WHERE ${FENCED} AND j.state IN ${LIVE}`),
    },
    // $3: one result per lease, or NULL when every result is null (the common case).
    // Also answers the (queue, block) rows of finished_blocks it inserted (NULL when none, the
    // common case), which the executor may trust for a while (recorded-blocks.ts).
    completeMany: completions(
      'job_complete',
      recordFinishedSql(schema, 'w', ' RETURNING queue, block'),
      `,
          (SELECT json_agg(json_build_array(b.queue, b.block::text)) FROM blocked b) AS recorded`,
    ),
    // The same, for a batch whose every (queue, block) the caller knows to be in finished_blocks
    // (see recorded-blocks.ts): counted only. Unnamed, the block CTE is planned at every
    // execution: 84 µs of server time for a completion of one job (bench:sql, completion planning).
    completeManyBlocksKnown: completions('job_complete_known', `counted AS (${countFinished('w', '')})`),
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
      name: statementName(schema, `job_leases_owned`),
      text: `SELECT j.id::text, j.lease_token::text AS token, j.queue FROM ${jobs} j
        WHERE j.lease_expires_at IS NOT NULL AND j.lease_owner = $1 AND j.state IN ${LIVE}
        ORDER BY j.lease_expires_at`,
    },
    // Every token issued so far is at most this (a sequence's last_value counts other
    // sessions' calls, cached or not); read before a process's first claim, it bounds what an
    // earlier process that used the same worker id can have been handed.
    tokenHighWater: {
      name: statementName(schema, `job_token_high_water`),
      text: `SELECT (last_value + ${TIMELINE_TOKEN_OFFSET})::text AS v FROM ${schema}.lease_token_seq`,
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
      name: statementName(schema, `job_reap`),
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
  } as const;
}
