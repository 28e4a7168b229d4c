// The jobs table's operator statements: reads by id, replay, cancel, run-now, and retention's
// walk. Each that moves a job into or out of a finished state adjusts finished_counts in the
// same statement, under the row's lock, so a job is counted in or out exactly once.

import { countFinishedSql, FINISHED_BLOCK_SHIFT, LIVE, recordFinishedSql, summaryColumns } from './job-fragments.ts';
import { leaderFenceSql } from './leader.ts';
import { statementName } from './statement-name.ts';

export function jobAdminQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  // The debounce or throttle rule the job's key holds it under (migration 0035), NULL for a plain
  // job: one probe of job_windows' job_id index (a job holds at most one key's row).
  const windowRule = `(SELECT w.rule FROM ${schema}.job_windows w WHERE w.job_id = j.id LIMIT 1) AS enqueue_window`;

  const countFinished = (from: string, sign: '' | '-') => countFinishedSql(schema, from, sign);
  const recordFinished = (from: string) => recordFinishedSql(schema, from);

  return {
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
      name: statementName(schema, `job_purge_scan`),
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
    get: { name: statementName(schema, `job_get`), text: `SELECT j.*, ${windowRule} FROM ${jobs} j WHERE j.id = $1` },
    // A read for one tenant: another tenant's job is not read at all, so it costs what an id
    // nobody has costs (no row leaves the server; docs/security.md).
    getInTenant: {
      name: statementName(schema, `job_get_in_tenant`),
      text: `SELECT j.*, ${windowRule} FROM ${jobs} j WHERE j.id = $1 AND j.tenant_id = $2`,
    },
    // The old state is read under the row's lock, so a replayed job leaves its state's count exactly once.
    // A dependent cancelled while it waited still has the edges of its unfinished parents (a
    // finished parent's edges are gone): it goes back to waiting for them, not to pending.
    replay: {
      name: statementName(schema, `job_replay`),
      text: `WITH old AS (SELECT id, state FROM ${jobs} WHERE id = $1 FOR UPDATE),
        edges AS (SELECT count(*)::int AS n FROM ${schema}.job_dependencies WHERE child_id = $1),
        r AS (UPDATE ${jobs} j SET state = CASE WHEN (SELECT n FROM edges) > 0 THEN 'waiting' ELSE 'pending' END,
          waiting_for = CASE WHEN (SELECT n FROM edges) > 0 THEN (SELECT n FROM edges) END, attempt = 0, run_at = now(),
          replay_count = j.replay_count + 1, dead_letter_reason = NULL, result = NULL, cancel_requested_at = NULL, progress = NULL,
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
      name: statementName(schema, `job_cancel`),
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
      name: statementName(schema, `job_run_now`),
      text: `UPDATE ${jobs} SET run_at = least(run_at, now()), updated_at = now()
        WHERE id = $1 AND state = 'pending'
        RETURNING *`,
    },
    replayDeadLetters: {
      name: statementName(schema, `job_replay_dead_letters`),
      text: `WITH v AS (
          SELECT id FROM ${jobs}
          WHERE state = 'dead_lettered' AND ($2::text IS NULL OR queue = $2) AND ($3::text IS NULL OR tenant_id = $3)
          ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
        )
        , r AS (UPDATE ${jobs} j SET state = 'pending', attempt = 0, run_at = now(),
          replay_count = j.replay_count + 1, dead_letter_reason = NULL, result = NULL, cancel_requested_at = NULL, progress = NULL,
          started_at = NULL, finished_at = NULL, updated_at = now()
        FROM v WHERE j.id = v.id
        RETURNING ${summaryColumns('j')})
        , counted AS (${countFinished(`(SELECT queue, 'dead_lettered' AS state FROM r) x`, '-')})
        SELECT * FROM r`,
    },
  } as const;
}
