// Named queries for durable workflows (runs, steps, events), built once per engine from
// the quoted schema. Every write an execution makes is fenced by its driving job's lease
// token AND by the run still running: `fence` locks both rows (FOR SHARE) for the
// statement, so a reclaim or a cancel either happened before it (nothing is written) or
// waits for it. It locks the run row first, then the job row (the order of `OF r, j`), as
// the store's transactions (cancel, replay, suspend, events) do: the other way round, a
// fence and a cancel could each hold one row and wait for the other (a deadlock).
// A step's output is committed first; the run's progress only goes up.

import { countFinishedSql, recordFinishedSql } from './job-fragments.ts';

const LIVE = `('leased', 'running')`;
/** A far run_at for a wait with no timeout: only an event moves it. */
export const NO_TIMEOUT_RUN_AT = `'9999-12-31T00:00:00Z'::timestamptz`;

export function workflowQueries(schema: string) {
  const runs = `${schema}.workflow_runs`;
  const steps = `${schema}.workflow_steps`;
  const events = `${schema}.workflow_events`;
  const jobs = `${schema}.jobs`;
  // $1 job id, $2 token, $3 run id.
  const fence = `fence AS (
      SELECT j.id FROM ${jobs} j JOIN ${runs} r ON r.job_id = j.id
      WHERE j.id = $1::bigint AND j.lease_token = $2::bigint AND j.state IN ${LIVE} AND r.id = $3::bigint AND r.state = 'running'
      FOR SHARE OF r, j)`;
  const fenced = `EXISTS (SELECT 1 FROM fence)`;
  // What a load answers beside the run's own columns: the database clock, whether the event it
  // waits for has arrived, and its history (one round trip, and one connection, per load).
  const loadColumns = `date_part('epoch', now()) * 1000 AS now_ms,
          EXISTS (SELECT 1 FROM ${events} e WHERE e.run_id = r.id AND e.name = r.wait_event AND e.consumed_by IS NULL) AS event_ready,
          (SELECT COALESCE(json_agg(json_build_object('name', s.name, 'occurrence', s.occurrence, 'seq', s.seq, 'kind', s.kind,
              'status', s.status, 'output', s.output, 'attempts', s.attempts) ORDER BY s.seq, s.started_at), '[]')
            FROM ${steps} s WHERE s.run_id = r.id) AS steps`;
  // The state a reader sees: dead-lettering and a cancel through the jobs API are the job's.
  const runState = `CASE WHEN r.state IN ('running', 'sleeping', 'waiting') AND j.state IN ('dead_lettered', 'cancelled')
      THEN j.state ELSE r.state END`;
  const summary = `r.id::text, r.name, r.tenant_id, ${runState} AS state, r.job_id::text, r.progress, r.wait_event,
      r.wake_at, r.replay_count, r.created_at, r.updated_at, r.finished_at`;
  const advance = (seq: string) => `UPDATE ${runs} SET progress = GREATEST(progress, ${seq} + 1), updated_at = now() WHERE id = $3::bigint`;

  return {
    insertRun: {
      name: `${schema}.wf_insert_run`,
      text: `INSERT INTO ${runs} (name, tenant_id, input, idempotency_key, parent_run_id) VALUES ($1, $2, $3::jsonb, $4, $5::bigint)
        ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING id::text`,
    },
    runByKey: {
      name: `${schema}.wf_run_by_key`,
      text: `SELECT ${summary} FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id
        WHERE r.tenant_id = $1 AND r.idempotency_key = $2`,
    },
    // The driving job of a new run (or of a replayed run whose job is gone).
    insertJob: {
      name: `${schema}.wf_insert_job`,
      text: `INSERT INTO ${jobs} (tenant_id, queue, job_type, payload, max_attempts)
        VALUES ($1, $2, $3, jsonb_build_object('runId', $4::text), $5) RETURNING id::text`,
    },
    linkJob: {
      name: `${schema}.wf_link_job`,
      text: `UPDATE ${runs} SET job_id = $2::bigint, updated_at = now() WHERE id = $1::bigint`,
    },
    summary: {
      name: `${schema}.wf_summary`,
      text: `SELECT ${summary} FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.id = $1::bigint`,
    },
    // One execution's load, step commit or completion goes out alone as a single-row statement
    // (load, commitStep, completeRun), several as one of arrays (loadMany, commitSteps,
    // completeRuns). A statement of arrays is planned for each execution: its generic plan
    // assumes ten rows, so PostgreSQL keeps choosing custom plans for small batches, about half a
    // millisecond of planning a lone execution (a resume on a quiet worker) would pay each time.
    // What an execution starts from: the run as it was (a sleeping or waiting run is taken back
    // to running, under the lease: marked), its steps and the database's clock. event_ready: an
    // event the run waits for has arrived (the wake-up's cause, for metrics).
    load: {
      name: `${schema}.wf_load`,
      text: `WITH m AS (
          UPDATE ${runs} r SET state = 'running', wait_event = NULL, wake_at = NULL, updated_at = now()
          FROM ${jobs} j
          WHERE r.id = $3::bigint AND r.state IN ('running', 'sleeping', 'waiting') AND j.id = r.job_id
            AND j.id = $1::bigint AND j.lease_token = $2::bigint AND j.state IN ${LIVE}
          RETURNING r.id)
        SELECT EXISTS (SELECT 1 FROM m) AS marked, r.id::text, r.name, r.tenant_id, r.input, r.state, r.job_id::text, r.output, r.wait_event, r.parent_run_id::text,
          ${loadColumns}
        FROM ${runs} r WHERE r.id = $3::bigint`,
    },
    // What executions start from, several in one statement ($1 job ids, $2 tokens, $3 run ids,
    // one per execution): each run as it was (a sleeping or waiting run is taken back to running,
    // under its lease: marked), its steps and the database's clock. event_ready: an event the run
    // waits for has arrived (the wake-up's cause, for metrics). ord: the position asked.
    loadMany: {
      name: `${schema}.wf_load_many`,
      text: `WITH i AS (
          SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS i(job_id, token, run_id, ord)),
        m AS (
          UPDATE ${runs} r SET state = 'running', wait_event = NULL, wake_at = NULL, updated_at = now()
          FROM i, ${jobs} j
          WHERE r.id = i.run_id AND r.state IN ('running', 'sleeping', 'waiting') AND j.id = r.job_id
            AND j.id = i.job_id AND j.lease_token = i.token AND j.state IN ${LIVE}
          RETURNING r.id)
        SELECT i.ord::int, EXISTS (SELECT 1 FROM m WHERE m.id = r.id) AS marked, r.id::text, r.name, r.tenant_id, r.input, r.state,
          r.job_id::text, r.output, r.wait_event, r.parent_run_id::text,
          ${loadColumns}
        FROM i JOIN ${runs} r ON r.id = i.run_id`,
    },
    // A step's output: one insert wins (a failed row is taken over); the loser gets no row
    // back and reads the winner's. $4 name, $5 occurrence, $6 seq, $7 output, $8 started.
    commitStep: {
      name: `${schema}.wf_commit_step`,
      text: `WITH ${fence},
        ins AS (
          INSERT INTO ${steps} AS s (run_id, name, occurrence, seq, kind, status, output, attempts, started_at, finished_at)
          SELECT $3::bigint, $4, $5, $6, 'step', 'succeeded', $7::jsonb, 1, $8::timestamptz, now() FROM fence
          ON CONFLICT (run_id, name, occurrence) DO UPDATE SET
            status = 'succeeded', output = EXCLUDED.output, seq = EXCLUDED.seq, attempts = s.attempts + 1,
            started_at = EXCLUDED.started_at, finished_at = now(), updated_at = now()
          WHERE s.status = 'failed' AND s.kind = 'step'
          RETURNING s.output),
        adv AS (${advance('$6::integer')} AND EXISTS (SELECT 1 FROM ins))
        SELECT ${fenced} AS fenced_in, EXISTS (SELECT 1 FROM ins) AS won, (SELECT output FROM ins) AS output`,
    },
    // Step outputs of several executions in one statement (one transaction, one WAL flush), each
    // row fenced by its own lease ($1 job ids, $2 tokens, $3 run ids, $4 names, $5 occurrences,
    // $6 seqs, $7 outputs, $8 start times). The fence locks its rows in one order (by job id,
    // each run before its job) rather than as the join happens to meet them.
    // One insert wins per step (a failed row is taken over): commits of one step in the same
    // batch are cut to the first one, the rest answer not won and read the winner's output.
    commitSteps: {
      name: `${schema}.wf_commit_steps`,
      text: `WITH i AS (
          SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::int[], $6::int[], $7::text[],
            $8::timestamptz[]) WITH ORDINALITY AS i(job_id, token, run_id, name, occurrence, seq, output, started_at, ord)),
        fence AS (
          SELECT i.* FROM i JOIN ${jobs} j ON j.id = i.job_id JOIN ${runs} r ON r.id = i.run_id AND r.job_id = j.id
          WHERE j.lease_token = i.token AND j.state IN ${LIVE} AND r.state = 'running'
          ORDER BY j.id FOR SHARE OF r, j),
        pick AS (SELECT DISTINCT ON (run_id, name, occurrence) * FROM fence ORDER BY run_id, name, occurrence, ord),
        ins AS (
          INSERT INTO ${steps} AS s (run_id, name, occurrence, seq, kind, status, output, attempts, started_at, finished_at)
          SELECT run_id, name, occurrence, seq, 'step', 'succeeded', output::jsonb, 1, started_at, now() FROM pick
          ON CONFLICT (run_id, name, occurrence) DO UPDATE SET
            status = 'succeeded', output = EXCLUDED.output, seq = EXCLUDED.seq, attempts = s.attempts + 1,
            started_at = EXCLUDED.started_at, finished_at = now(), updated_at = now()
          WHERE s.status = 'failed' AND s.kind = 'step'
          RETURNING s.run_id, s.name, s.occurrence, s.seq, s.output),
        adv AS (
          UPDATE ${runs} r SET progress = GREATEST(r.progress, a.seq + 1), updated_at = now()
          FROM (SELECT run_id, max(seq) AS seq FROM ins GROUP BY run_id) a WHERE r.id = a.run_id)
        SELECT i.ord::int, EXISTS (SELECT 1 FROM fence f WHERE f.ord = i.ord) AS fenced_in, w.run_id IS NOT NULL AS won, w.output
        FROM i LEFT JOIN (SELECT p.ord, ins.run_id, ins.output FROM pick p JOIN ins USING (run_id, name, occurrence)) w ON w.ord = i.ord`,
    },
    readStep: {
      name: `${schema}.wf_read_step`,
      text: `SELECT kind, status, output FROM ${steps} WHERE run_id = $1::bigint AND name = $2 AND occurrence = $3`,
    },
    // A failed attempt of a step, for its history (the job records the failure itself).
    failStep: {
      name: `${schema}.wf_fail_step`,
      text: `WITH ${fence}
        INSERT INTO ${steps} AS s (run_id, name, occurrence, seq, kind, status, error, attempts, started_at, finished_at)
        SELECT $3::bigint, $4, $5, $6, 'step', 'failed', $7::jsonb, 1, $8::timestamptz, now() FROM fence
        ON CONFLICT (run_id, name, occurrence) DO UPDATE SET
          error = EXCLUDED.error, seq = EXCLUDED.seq, attempts = s.attempts + 1,
          started_at = EXCLUDED.started_at, finished_at = now(), updated_at = now()
        WHERE s.status = 'failed'`,
    },
    // Starts a sleep or an event wait, or finds it started: the wake-up time is set once, from
    // the database clock ($7 delay ms or $8 an instant; neither: no timeout). Returns the row.
    armWait: {
      name: `${schema}.wf_arm_wait`,
      text: `WITH ${fence}
        INSERT INTO ${steps} AS s (run_id, name, occurrence, seq, kind, status, wait_event, wake_at)
        SELECT $3::bigint, $4, $5, $6, $9, 'waiting', $10,
          COALESCE($8::timestamptz, now() + make_interval(secs => $7::double precision / 1000.0)) FROM fence
        ON CONFLICT (run_id, name, occurrence) DO UPDATE SET updated_at = s.updated_at,
          -- A children wait re-arms its safety-net poll on each execution.
          wake_at = CASE WHEN s.kind = 'children' AND s.status = 'waiting' THEN EXCLUDED.wake_at ELSE s.wake_at END
        RETURNING s.kind, s.status, s.output, s.wake_at, COALESCE(s.wake_at <= now(), false) AS due`,
    },
    // Ends a wait that is over: an event of its name consumed (oldest first), or its time
    // come (output NULL: timed out; a sleep). $4 name, $5 occurrence, $6 event name, $7 step key.
    finishWait: {
      name: `${schema}.wf_finish_wait`,
      text: `WITH ${fence},
        ev AS (
          SELECT e.id, e.payload FROM ${events} e
          WHERE e.run_id = $3::bigint AND e.name = $6 AND e.consumed_by IS NULL AND ${fenced}
          ORDER BY e.id LIMIT 1 FOR UPDATE),
        done AS (
          UPDATE ${steps} s SET status = 'succeeded', attempts = s.attempts + 1, finished_at = now(), updated_at = now(),
            output = (SELECT jsonb_build_object('name', $6::text, 'payload', ev.payload) FROM ev)
          WHERE s.run_id = $3::bigint AND s.name = $4 AND s.occurrence = $5 AND s.status = 'waiting' AND ${fenced}
            AND (EXISTS (SELECT 1 FROM ev) OR s.wake_at <= now())
          RETURNING s.output, s.seq),
        used AS (UPDATE ${events} e SET consumed_by = $7 FROM ev WHERE e.id = ev.id AND EXISTS (SELECT 1 FROM done)),
        adv AS (${advance('(SELECT seq FROM done)')} AND EXISTS (SELECT 1 FROM done))
        SELECT ${fenced} AS fenced_in, EXISTS (SELECT 1 FROM done) AS done, (SELECT output FROM done) AS output`,
    },
    // How child runs stand ($1 their ids), with the last error of a dead-lettered one's job.
    childOutcomes: {
      name: `${schema}.wf_child_outcomes`,
      text: `SELECT r.id::text, ${runState} AS state, r.output, j.last_error
        FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.id = ANY ($1::bigint[])`,
    },
    // Ends a wait with the output the execution worked out ($6), fenced like every write.
    completeWait: {
      name: `${schema}.wf_complete_wait`,
      text: `WITH ${fence},
        done AS (
          UPDATE ${steps} s SET status = 'succeeded', output = $6::jsonb, attempts = s.attempts + 1,
            finished_at = now(), updated_at = now()
          WHERE s.run_id = $3::bigint AND s.name = $4 AND s.occurrence = $5 AND s.status = 'waiting' AND ${fenced}
          RETURNING s.output, s.seq),
        adv AS (${advance('(SELECT seq FROM done)')} AND EXISTS (SELECT 1 FROM done))
        SELECT ${fenced} AS fenced_in, EXISTS (SELECT 1 FROM done) AS done, (SELECT output FROM done) AS output`,
    },
    // A child run finished: its parent, if waiting, is due now. $1 the child run.
    wakeParent: {
      name: `${schema}.wf_wake_parent`,
      text: `UPDATE ${jobs} j SET run_at = now(), updated_at = now()
        FROM ${runs} c JOIN ${runs} p ON p.id = c.parent_run_id
        WHERE c.id = $1::bigint AND p.state = 'waiting' AND j.id = p.job_id AND j.state = 'pending' AND j.run_at > now()
        RETURNING j.queue`,
    },
    // A cancelled run's live descendants (every level) are cancelled with it, with their driving
    // jobs (a live lease is revoked: its worker's next heartbeat misses and aborts the signal), and
    // the plain jobs any of them awaits that have not started (pending or waiting).
    cancelChildren: {
      name: `${schema}.wf_cancel_children`,
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
    // Plain jobs a run awaits (ctx.all): linked to the run, and marked so that their finishing
    // statement makes the waiting run due (migration 0016's trigger). $3: the run's queue's channel.
    linkChildJobs: {
      name: `${schema}.wf_link_child_jobs`,
      text: `WITH l AS (
          INSERT INTO ${schema}.workflow_child_jobs (run_id, job_id, channel)
          SELECT $1::bigint, j, $3 FROM unnest($2::bigint[]) AS j ON CONFLICT DO NOTHING)
        UPDATE ${jobs} SET has_dependents = true WHERE id = ANY ($2::bigint[]) AND NOT has_dependents`,
    },
    jobOutcomes: {
      name: `${schema}.wf_job_outcomes`,
      text: `SELECT id::text, state, result, last_error FROM ${jobs} WHERE id = ANY ($1::bigint[])`,
    },
    // Suspend, 1 of 2 (in one transaction): the run row first (sendEvent locks it first too,
    // so an event sent meanwhile is seen by one side or the other). $4 state, $5 event name,
    // $6 step name, $7 occurrence.
    suspendRun: {
      name: `${schema}.wf_suspend_run`,
      text: `UPDATE ${runs} r SET state = $4, wait_event = $5,
          wake_at = (SELECT s.wake_at FROM ${steps} s WHERE s.run_id = r.id AND s.name = $6 AND s.occurrence = $7),
          updated_at = now()
        WHERE r.id = $3::bigint AND r.job_id = $1::bigint AND r.state = 'running' AND $2::bigint IS NOT NULL
        RETURNING r.state`,
    },
    // Suspend, 2 of 2: the driving job back to pending, its attempt refunded (waiting is not a
    // failure), due at the wake-up time, or now when an event it waits for is already here.
    // A job with a cancel request (migration 0020) is never pending again: nothing holds it once
    // the execution gives it back, so it is cancelled (and the run reads as cancelled).
    suspendJob: {
      name: `${schema}.wf_suspend_job`,
      text: `WITH w AS (UPDATE ${jobs} j SET
          state = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled' ELSE 'pending' END,
          finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN now() END,
          run_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN j.run_at
            WHEN $4::text IS NOT NULL AND EXISTS (
              SELECT 1 FROM ${events} e WHERE e.run_id = $3::bigint AND e.name = $4 AND e.consumed_by IS NULL)
            THEN now() ELSE COALESCE((SELECT r.wake_at FROM ${runs} r WHERE r.id = $3::bigint), ${NO_TIMEOUT_RUN_AT}) END,
          attempt = greatest(j.attempt - 1, 0),
          lease_owner = NULL, lease_expires_at = NULL, started_at = NULL, updated_at = now()
        WHERE j.id = $1::bigint AND j.lease_token = $2::bigint AND j.state IN ${LIVE}
        RETURNING j.id, j.queue, j.state, j.state = 'pending' AND j.run_at <= now() AS due),
        ${recordFinishedSql(schema, 'w')}
        SELECT queue, due FROM w`,
    },
    // The run's output; $4 output. Answers nothing when fenced, cancelled or already over.
    completeRun: {
      name: `${schema}.wf_complete_run`,
      text: `WITH ${fence}
        UPDATE ${runs} r SET state = 'succeeded', output = $4::jsonb, finished_at = now(), updated_at = now()
        WHERE r.id = $3::bigint AND ${fenced}
        RETURNING r.output`,
    },
    // Runs' outputs, several in one statement ($1 job ids, $2 tokens, $3 run ids, $4 outputs),
    // each fenced by its own lease (locked in job id order, as commitSteps). Answers a row for
    // each run completed; none for one fenced off, cancelled or already over.
    completeRuns: {
      name: `${schema}.wf_complete_runs`,
      text: `WITH i AS (
          SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[]) WITH ORDINALITY AS i(job_id, token, run_id, output, ord)),
        fence AS (
          SELECT i.* FROM i JOIN ${jobs} j ON j.id = i.job_id JOIN ${runs} r ON r.id = i.run_id AND r.job_id = j.id
          WHERE j.lease_token = i.token AND j.state IN ${LIVE} AND r.state = 'running'
          ORDER BY j.id FOR SHARE OF r, j)
        UPDATE ${runs} r SET state = 'succeeded', output = f.output::jsonb, finished_at = now(), updated_at = now()
        FROM fence f WHERE r.id = f.run_id
        RETURNING f.ord::int, r.output`,
    },
    // Why a fenced write was refused: the run's state and whether the lease is still current.
    why: {
      name: `${schema}.wf_why`,
      text: `SELECT r.state, r.output, r.job_id = $1::bigint AS ours,
          EXISTS (SELECT 1 FROM ${jobs} j WHERE j.id = $1::bigint AND j.lease_token = $2::bigint AND j.state IN ${LIVE}) AS lease_current
        FROM ${runs} r WHERE r.id = $3::bigint`,
    },
    // Operator and producer actions lock the run row first (see suspendRun).
    lockRun: {
      name: `${schema}.wf_lock_run`,
      text: `SELECT r.state AS stored_state, ${runState} AS state, r.wait_event, r.job_id::text, j.state AS job_state,
          j.queue, r.name, r.tenant_id
        FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.id = $1::bigint FOR UPDATE OF r`,
    },
    // An event in one statement (one round trip, no transaction held across calls): the run row
    // is locked first (as suspendRun does, so an event sent meanwhile is seen by one side or the
    // other) and read as locked, the event inserted unless the run is over or the key repeats, and
    // the run's job made due when the run waits for this event. The job's row is not filtered on
    // its state: a row read before the lock wait would be skipped on its old version; the CASE
    // decides on the version it locks. $1 run, $2 name, $3 payload, $4 idempotency key.
    sendEvent: {
      name: `${schema}.wf_send_event`,
      text: `WITH r AS (
          SELECT r.id, r.state AS stored_state, ${runState} AS state, r.wait_event, r.job_id
          FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.id = $1::bigint FOR UPDATE OF r),
        ins AS (
          INSERT INTO ${events} (run_id, name, payload, idempotency_key)
          SELECT $1::bigint, $2, $3::jsonb, $4 FROM r WHERE r.state NOT IN ('succeeded', 'cancelled')
          ON CONFLICT (run_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
          RETURNING id),
        woke AS (
          UPDATE ${jobs} j SET
            run_at = CASE WHEN j.state = 'pending' AND j.run_at > now() THEN now() ELSE j.run_at END, updated_at = now()
          FROM r WHERE j.id = r.job_id AND r.stored_state = 'waiting' AND r.wait_event = $2 AND EXISTS (SELECT 1 FROM ins)
          RETURNING j.queue, j.state = 'pending' AS due)
        SELECT (SELECT state FROM r) AS state, (SELECT id::text FROM ins) AS event_id,
          (SELECT e.id::text FROM ${events} e WHERE e.run_id = $1::bigint AND e.idempotency_key = $4) AS old_id,
          (SELECT queue FROM woke WHERE due) AS woke_queue`,
    },
    eventByKey: {
      name: `${schema}.wf_event_by_key`,
      text: `SELECT id::text FROM ${events} WHERE run_id = $1::bigint AND idempotency_key = $2`,
    },
    // The event's wake-up: the waiting run's job is due now.
    wakeJob: {
      name: `${schema}.wf_wake_job`,
      text: `UPDATE ${jobs} SET run_at = now(), updated_at = now()
        WHERE id = $1::bigint AND state = 'pending' AND run_at > now() RETURNING queue`,
    },
    cancelRun: {
      name: `${schema}.wf_cancel_run`,
      text: `UPDATE ${runs} SET state = 'cancelled', finished_at = now(), updated_at = now() WHERE id = $1::bigint`,
    },
    cancelJob: {
      name: `${schema}.wf_cancel_job`,
      // A live lease is revoked too: the worker learns it at its next heartbeat and aborts the signal.
      text: `WITH j AS (UPDATE ${jobs} SET state = 'cancelled', finished_at = now(), updated_at = now(),
          lease_owner = NULL, lease_expires_at = NULL
        WHERE id = $1::bigint AND state IN ('pending', 'leased', 'running') RETURNING id, queue, state)
        , ${recordFinishedSql(schema, 'j')}
        SELECT count(*)::int AS n FROM j`,
    },
    replayJob: {
      name: `${schema}.wf_replay_job`,
      // The old state is read under the row's lock, so the job leaves its state's count once.
      text: `WITH old AS (SELECT id, state FROM ${jobs} WHERE id = $1::bigint FOR UPDATE),
        r AS (UPDATE ${jobs} j SET state = 'pending', attempt = 0, run_at = now(),
          replay_count = j.replay_count + 1, dead_letter_reason = NULL, result = NULL, cancel_requested_at = NULL,
          started_at = NULL, finished_at = NULL, updated_at = now()
        FROM old WHERE j.id = old.id AND old.state IN ('dead_lettered', 'cancelled', 'succeeded')
        RETURNING j.id, j.queue),
        counted AS (${countFinishedSql(schema, '(SELECT r.queue, old.state FROM r JOIN old ON old.id = r.id) x', '-')})
        SELECT queue FROM r`,
    },
    replayRun: {
      name: `${schema}.wf_replay_run`,
      text: `UPDATE ${runs} SET state = 'running', wait_event = NULL, wake_at = NULL, finished_at = NULL,
          replay_count = replay_count + 1, updated_at = now()
        WHERE id = $1::bigint`,
    },
    get: {
      name: `${schema}.wf_get`,
      text: `SELECT ${summary}, r.input, r.output, j.attempt, j.max_attempts, j.errors, j.dead_letter_reason
        FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.id = $1::bigint`,
    },
    steps: {
      name: `${schema}.wf_steps`,
      text: `SELECT name, occurrence, seq, kind, status, attempts, output, error, wait_event, wake_at, started_at, finished_at
        FROM ${steps} WHERE run_id = $1::bigint ORDER BY seq, started_at`,
    },
    // The same two reads for one tenant ($2): another tenant's run is not read at all, so it
    // costs what an id nobody has costs (docs/security.md).
    getInTenant: {
      name: `${schema}.wf_get_in_tenant`,
      text: `SELECT ${summary}, r.input, r.output, j.attempt, j.max_attempts, j.errors, j.dead_letter_reason
        FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.id = $1::bigint AND r.tenant_id = $2`,
    },
    stepsInTenant: {
      name: `${schema}.wf_steps_in_tenant`,
      text: `SELECT s.name, s.occurrence, s.seq, s.kind, s.status, s.attempts, s.output, s.error, s.wait_event, s.wake_at,
          s.started_at, s.finished_at
        FROM ${steps} s JOIN ${runs} r ON r.id = s.run_id AND r.tenant_id = $2
        WHERE s.run_id = $1::bigint ORDER BY s.seq, s.started_at`,
    },
    list: {
      name: `${schema}.wf_list`,
      text: `SELECT * FROM (
          SELECT ${summary} FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id
          WHERE ($1::text IS NULL OR r.name = $1) AND ($3::text IS NULL OR r.tenant_id = $3)
        ) x WHERE ($2::text IS NULL OR x.state = $2)
        ORDER BY x.id::bigint DESC LIMIT $4 OFFSET $5`,
    },
    countByState: {
      name: `${schema}.wf_count_by_state`,
      text: `SELECT r.name, ${runState} AS state, count(*)::int AS n
        FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id GROUP BY 1, 2`,
    },
  } as const;
}

export type WorkflowQueries = ReturnType<typeof workflowQueries>;
