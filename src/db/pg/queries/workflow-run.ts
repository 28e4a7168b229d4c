// Named queries of the producer's and operator's side of workflow runs: start, events, cancel,
// replay and the reads. Each action locks the run row before the job row, as the fence does
// (see workflow-fragments.ts), so the two never wait for each other in a circle.

import { countFinishedSql, recordFinishedSql } from './job-fragments.ts';
import { statementName } from './statement-name.ts';
import { BEFORE_DEADLINE, eventEndsWait, workflowFragments } from './workflow-fragments.ts';

export function workflowRunQueries(schema: string) {
  const { runs, steps, events, jobs, runState } = workflowFragments(schema);
  const summary = `r.id::text, r.name, r.tenant_id, ${runState} AS state, r.job_id::text, r.progress, r.wait_event,
      r.wake_at, r.blocked_reason, r.replay_count, r.created_at, r.updated_at, r.finished_at, r.deadline_at`;

  return {
    // The registry of defined workflows (migration 0030): a starting engine upserts its own, in
    // name order (two engines registering the same names lock them in one order).
    register: {
      name: statementName(schema, `wf_register`),
      text: `INSERT INTO ${schema}.workflow_definitions AS d (name, queue, max_attempts, run_timeout_ms)
        SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[]) AS x(name, queue, max_attempts, run_timeout_ms) ORDER BY 1
        ON CONFLICT (name) DO UPDATE SET queue = excluded.queue, max_attempts = excluded.max_attempts,
          run_timeout_ms = excluded.run_timeout_ms, last_seen_at = now()`,
    },
    definition: {
      name: statementName(schema, `wf_definition`),
      text: `SELECT queue, max_attempts, run_timeout_ms FROM ${schema}.workflow_definitions WHERE name = $1`,
    },
    insertRun: {
      name: statementName(schema, `wf_insert_run`),
      // $6: the run's timeout in ms (NULL: none); its deadline is taken from the database clock.
      // $7: the producer's trace context (NULL: none), kept for a replay's new driving job (0036).
      text: `INSERT INTO ${runs} (name, tenant_id, input, idempotency_key, parent_run_id, deadline_at, trace_context)
        VALUES ($1, $2, $3::jsonb, $4, $5::bigint, now() + make_interval(secs => $6::double precision / 1000.0), $7::jsonb)
        ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING id::text`,
    },
    runByKey: {
      name: statementName(schema, `wf_run_by_key`),
      text: `SELECT ${summary} FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id
        WHERE r.tenant_id = $1 AND r.idempotency_key = $2`,
    },
    // The driving job of a new run (or of a replayed run whose job is gone). $6: the producer's
    // trace context, which each execution's span continues (as a plain job's, migration 0008);
    // for a replay, the one the run kept (migration 0036).
    insertJob: {
      name: statementName(schema, `wf_insert_job`),
      text: `INSERT INTO ${jobs} (tenant_id, queue, job_type, payload, max_attempts, trace_context)
        VALUES ($1, $2, $3, jsonb_build_object('runId', $4::text), $5, $6::jsonb) RETURNING id::text`,
    },
    // A debounced or throttled start only (workflow-window.ts): the driving job due at $7, the
    // instant its key's window sets (a trailing debounce's end), from the key's clock.
    insertJobAt: {
      name: statementName(schema, `wf_insert_job_at`),
      text: `INSERT INTO ${jobs} (tenant_id, queue, job_type, payload, max_attempts, trace_context, run_at)
        VALUES ($1, $2, $3, jsonb_build_object('runId', $4::text), $5, $6::jsonb, $7) RETURNING id::text, run_at`,
    },
    // A trailing debounce folds a start into the run of workflow $5 whose driving job $1 is
    // pending and was never claimed: the run's input becomes $2 (what its first execution
    // loads), its job's trace context $3 and run_at $4. The run row is locked before the job
    // row, as every action does; a claim that locked the job first (its lease token is then
    // set) leaves the job's WHERE nothing to match, so nothing is written and the caller
    // creates a new run. One statement: the input and the job change together or not at all.
    // The one path that locks the job row first is the delete of a finished driving job (its
    // trigger then deletes the run): this WHERE skips such a job unless the statement's snapshot
    // predates the job's claim, i.e. it waited on the run row across the claim, the job's end and
    // the delete. Nothing holds a run row that long; were it to happen, PostgreSQL aborts one side.
    // Only a run due ($4) before its deadline takes the start: one that would time out before it
    // executes would drop this start's input, so the start creates a new run instead.
    foldRun: {
      name: statementName(schema, `wf_fold_run`),
      text: `WITH run AS (
          SELECT r.id FROM ${runs} r WHERE r.job_id = $1::bigint AND r.name = $5
            AND (r.deadline_at IS NULL OR r.deadline_at > $4::timestamptz) FOR UPDATE
        ), job AS (
          UPDATE ${jobs} j SET trace_context = $3::jsonb, run_at = $4, updated_at = now()
          FROM run WHERE j.id = $1::bigint AND j.state = 'pending' AND j.lease_token IS NULL
          RETURNING j.id
        )
        UPDATE ${runs} r SET input = $2::jsonb, trace_context = $3::jsonb, updated_at = now() FROM run, job WHERE r.id = run.id
        RETURNING r.id::text`,
    },
    // The run driving job $1 belongs to: the answer of a start its key dropped.
    runByJob: {
      name: statementName(schema, `wf_run_by_job`),
      text: `SELECT ${summary} FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.job_id = $1::bigint LIMIT 1`,
    },
    linkJob: {
      name: statementName(schema, `wf_link_job`),
      text: `UPDATE ${runs} SET job_id = $2::bigint, updated_at = now() WHERE id = $1::bigint`,
    },
    summary: {
      name: statementName(schema, `wf_summary`),
      text: `SELECT ${summary} FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.id = $1::bigint`,
    },
    // Operator and producer actions lock the run row first (see suspendRun, workflow-wait.ts).
    lockRun: {
      name: statementName(schema, `wf_lock_run`),
      text: `SELECT r.state AS stored_state, ${runState} AS state, r.wait_event, r.job_id::text, j.state AS job_state,
          j.queue, r.name, r.tenant_id, r.trace_context::text
        FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.id = $1::bigint FOR UPDATE OF r`,
    },
    // An event in one statement (one round trip, no transaction held across calls): the run row
    // is locked first (as suspendRun does, so an event sent meanwhile is seen by one side or the
    // other) and read as locked, the event inserted unless the run is over or the key repeats, and
    // the run's job made due when one of its waiting event steps takes this event (one of its
    // names, its match, sent before its deadline: a later one ends nothing, see eventEndsWait).
    // The job's row is not filtered on
    // its state: a row read before the lock wait would be skipped on its old version; the CASE
    // decides on the version it locks. $1 run, $2 name, $3 payload, $4 idempotency key.
    sendEvent: {
      name: statementName(schema, `wf_send_event`),
      text: `WITH r AS (
          SELECT r.id, r.state AS stored_state, ${runState} AS state, r.job_id
          FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.id = $1::bigint FOR UPDATE OF r),
        ins AS (
          INSERT INTO ${events} (run_id, name, payload, idempotency_key)
          SELECT $1::bigint, $2, $3::jsonb, $4 FROM r WHERE r.state NOT IN ('succeeded', 'cancelled', 'timed_out')
          ON CONFLICT (run_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
          RETURNING id, run_id, name, payload, created_at),
        woke AS (
          UPDATE ${jobs} j SET
            run_at = CASE WHEN j.state = 'pending' AND j.run_at > now() THEN now() ELSE j.run_at END, updated_at = now()
          FROM r WHERE j.id = r.job_id AND r.stored_state = 'waiting' AND EXISTS (
              -- Any of the waits parked together (a parallel execution) may be this event's, each
              -- decided by its own names, match and deadline (eventEndsWait; the event is sent now).
              SELECT 1 FROM ins e JOIN ${steps} s ON s.run_id = e.run_id AND s.kind = 'event' AND s.status = 'waiting'
              WHERE ${eventEndsWait('s')})
          RETURNING j.queue, j.state = 'pending' AS due)
        SELECT (SELECT state FROM r) AS state, (SELECT id::text FROM ins) AS event_id,
          (SELECT e.id::text FROM ${events} e WHERE e.run_id = $1::bigint AND e.idempotency_key = $4) AS old_id,
          (SELECT queue FROM woke WHERE due) AS woke_queue`,
    },
    eventByKey: {
      name: statementName(schema, `wf_event_by_key`),
      text: `SELECT id::text FROM ${events} WHERE run_id = $1::bigint AND idempotency_key = $2`,
    },
    cancelRun: {
      name: statementName(schema, `wf_cancel_run`),
      text: `UPDATE ${runs} SET state = 'cancelled', finished_at = now(), updated_at = now() WHERE id = $1::bigint`,
    },
    cancelJob: {
      name: statementName(schema, `wf_cancel_job`),
      // A live lease is revoked too: the worker learns it at its next heartbeat and aborts the signal.
      text: `WITH j AS (UPDATE ${jobs} SET state = 'cancelled', finished_at = now(), updated_at = now(),
          lease_owner = NULL, lease_expires_at = NULL
        WHERE id = $1::bigint AND state IN ('pending', 'leased', 'running') RETURNING id, queue, state)
        , ${recordFinishedSql(schema, 'j')}
        SELECT count(*)::int AS n FROM j`,
    },
    replayJob: {
      name: statementName(schema, `wf_replay_job`),
      // The old state is read under the row's lock, so the job leaves its state's count once.
      text: `WITH old AS (SELECT id, state FROM ${jobs} WHERE id = $1::bigint FOR UPDATE),
        r AS (UPDATE ${jobs} j SET state = 'pending', attempt = 0, run_at = now(),
          replay_count = j.replay_count + 1, dead_letter_reason = NULL, result = NULL, cancel_requested_at = NULL, progress = NULL,
          started_at = NULL, finished_at = NULL, updated_at = now()
        FROM old WHERE j.id = old.id AND old.state IN ('dead_lettered', 'cancelled', 'succeeded')
        RETURNING j.id, j.queue),
        counted AS (${countFinishedSql(schema, '(SELECT r.queue, old.state FROM r JOIN old ON old.id = r.id) x', '-')})
        SELECT queue FROM r`,
    },
    replayRun: {
      name: statementName(schema, `wf_replay_run`),
      text: `UPDATE ${runs} SET state = 'running', wait_event = NULL, wake_at = NULL, finished_at = NULL, blocked_reason = NULL,
          loaded_token = NULL, crashes = 0, replay_count = replay_count + 1, updated_at = now()
        WHERE id = $1::bigint`,
    },
    // A cancelled run's live descendants (every level) are cancelled with it, with their driving
    // jobs (a live lease is revoked: its worker's next heartbeat misses and aborts the signal), and
    // the plain jobs any of them awaits that have not started (pending or waiting).
    cancelChildren: {
      name: statementName(schema, `wf_cancel_children`),
      text: `WITH RECURSIVE d(id) AS (
          SELECT id FROM ${runs} WHERE parent_run_id = $1::bigint AND state IN ('running', 'sleeping', 'waiting')
          UNION
          SELECT r.id FROM ${runs} r JOIN d ON r.parent_run_id = d.id WHERE r.state IN ('running', 'sleeping', 'waiting'))
        , c AS (
          UPDATE ${runs} SET state = 'cancelled', finished_at = now(), updated_at = now()
          WHERE id IN (SELECT id FROM d) RETURNING job_id)
        , pj AS (SELECT job_id FROM ${schema}.workflow_child_jobs WHERE run_id = $1::bigint OR run_id IN (SELECT id FROM d))
        , j AS (UPDATE ${jobs} SET state = 'cancelled', finished_at = now(), updated_at = now(), lease_owner = NULL, lease_expires_at = NULL
          WHERE (id IN (SELECT job_id FROM c) AND state IN ('pending', 'leased', 'running'))
             OR (id IN (SELECT job_id FROM pj) AND state IN ('pending', 'waiting'))
          RETURNING id, queue, state)
        , ${recordFinishedSql(schema, 'j')}
        SELECT count(*)::int AS n FROM j`,
    },
    get: {
      name: statementName(schema, `wf_get`),
      text: `SELECT ${summary}, r.input, r.output, j.attempt, j.max_attempts, j.errors, j.dead_letter_reason
        FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.id = $1::bigint`,
    },
    // A patch marker takes the next call's position (seq): it lists before that call's step. Its
    // start is the database's clock and a step's the worker's, so started_at cannot order them.
    steps: {
      name: statementName(schema, `wf_steps`),
      text: `SELECT name, occurrence, seq, kind, status, attempts, output, error, wait_event, wake_at, started_at, finished_at
        FROM ${steps} WHERE run_id = $1::bigint ORDER BY seq, kind <> 'patch', started_at`,
    },
    // The same two reads for one tenant ($2): another tenant's run is not read at all, so it
    // costs what an id nobody has costs (docs/security.md).
    getInTenant: {
      name: statementName(schema, `wf_get_in_tenant`),
      text: `SELECT ${summary}, r.input, r.output, j.attempt, j.max_attempts, j.errors, j.dead_letter_reason
        FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.id = $1::bigint AND r.tenant_id = $2`,
    },
    stepsInTenant: {
      name: statementName(schema, `wf_steps_in_tenant`),
      text: `SELECT s.name, s.occurrence, s.seq, s.kind, s.status, s.attempts, s.output, s.error, s.wait_event, s.wake_at,
          s.started_at, s.finished_at
        FROM ${steps} s JOIN ${runs} r ON r.id = s.run_id AND r.tenant_id = $2
        WHERE s.run_id = $1::bigint ORDER BY s.seq, s.kind <> 'patch', s.started_at`,
    },
    // Newest first. $6, a cursor, starts below that id. The state filter $2 is the reader's state
    // (runState) written on the stored one, so the planner counts it from the column's
    // statistics: a stored state reads as itself unless the run is live and its job was
    // dead-lettered or cancelled (no run is stored dead-lettered, so that branch folds away and
    // the join becomes an inner one). Unnamed, so each listing is planned with its filters in
    // hand and the constant conditions fold away. Without a state, or with a stored one
    // (succeeded, blocked, running, sleeping, waiting), the runs are walked in id order until the page is
    // full (the primary key, the name's index, or the state index of migration 0027); a tenant
    // filter walks past other tenants' runs, and a live state past the live runs whose job ended
    // them. dead_lettered and cancelled read every run in that state (the stored ones through the
    // state index, the live ones through their dead-lettered or cancelled jobs) and sort them;
    // timed_out reads the stored ones and the live runs past their deadline (migration 0034).
    list: {
      text: `SELECT ${summary} FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id
        WHERE ($1::text IS NULL OR r.name = $1) AND ($3::text IS NULL OR r.tenant_id = $3)
          AND ($6::bigint IS NULL OR r.id < $6)
          AND ($2::text IS NULL
            OR ($2 <> 'dead_lettered' AND r.state = $2
              AND ($2 IN ('succeeded', 'cancelled', 'timed_out', 'blocked')
                OR ((j.state IS NULL OR j.state NOT IN ('dead_lettered', 'cancelled')) AND ${BEFORE_DEADLINE})))
            OR ($2 IN ('dead_lettered', 'cancelled') AND r.state IN ('running', 'sleeping', 'waiting') AND j.state = $2)
            OR ($2 = 'timed_out' AND r.state IN ('running', 'sleeping', 'waiting') AND NOT ${BEFORE_DEADLINE}
              AND (j.state IS NULL OR j.state NOT IN ('dead_lettered', 'cancelled'))))
        ORDER BY r.id DESC LIMIT $4 OFFSET $5`,
    },
    // Finished runs from their counts (migration 0029: the folded counts plus the deltas not
    // folded yet), live ones where they are, through the state index: a live run reads as its
    // job's state once that job was dead-lettered or cancelled, which no write to the run marks.
    // The runs come first, so their lock is asked first: a TRUNCATE of the runs, which holds
    // theirs while its trigger empties the counts, is waited for before the counts are touched.
    countByState: {
      name: statementName(schema, `wf_count_by_state`),
      text: `SELECT name, state, sum(n)::int AS n FROM (
          SELECT r.name, ${runState} AS state, 1 AS n FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id
            WHERE r.state IN ('running', 'sleeping', 'waiting', 'blocked')
          UNION ALL SELECT name, state, n FROM ${schema}.workflow_run_count_deltas
          UNION ALL SELECT name, state, n FROM ${schema}.workflow_run_counts) x
        GROUP BY 1, 2 HAVING sum(n) <> 0`,
    },
    // The deltas into the counts, one fold at a time ($1: the schema's advisory-lock namespace;
    // a fold that finds another under way folds nothing), so no two folds lock counts in
    // different orders. A count a fold left at 0 is removed by the next one that does not touch
    // it (a statement does not see its own upserts). Answers how many deltas it folded.
    foldCounts: {
      name: statementName(schema, `wf_fold_counts`),
      text: `WITH lock AS (SELECT pg_try_advisory_xact_lock($1::int, 0) AS got),
        moved AS (DELETE FROM ${schema}.workflow_run_count_deltas WHERE (SELECT got FROM lock) RETURNING name, state, n),
        summed AS (SELECT name, state, sum(n) AS n FROM moved GROUP BY 1, 2 HAVING sum(n) <> 0),
        folded AS (
          INSERT INTO ${schema}.workflow_run_counts AS c (name, state, n) SELECT name, state, n FROM summed ORDER BY 1, 2
          ON CONFLICT (name, state) DO UPDATE SET n = c.n + excluded.n),
        emptied AS (
          DELETE FROM ${schema}.workflow_run_counts c
          WHERE (SELECT got FROM lock) AND c.n = 0 AND NOT EXISTS (SELECT 1 FROM summed s WHERE s.name = c.name AND s.state = c.state))
        SELECT count(*)::int AS n FROM moved`,
    },
  } as const;
}

export type WorkflowRunQueries = ReturnType<typeof workflowRunQueries>;
