// Named queries of one execution of a workflow run: its load, its steps' outputs and failures,
// its completion, and why a write was refused. Every write is fenced by the driving job's lease
// and the run still running (see workflow-fragments.ts); a step's output is committed first,
// and the run's progress only goes up.

import { statementName } from './statement-name.ts';
import { BEFORE_DEADLINE, FENCE_LOCKS, LIVE, workflowFragments } from './workflow-fragments.ts';

export function workflowExecutionQueries(schema: string) {
  const { runs, steps, jobs, fence, fenced, advance, eventEndsAWait } = workflowFragments(schema);
  // What a load answers beside the run's own columns: the database clock, whether the event it
  // waits for has arrived, and its history (one round trip, and one connection, per load).
  const loadColumns = `date_part('epoch', now()) * 1000 AS now_ms, r.deadline_at,
          r.state = 'waiting' AND ${eventEndsAWait('r.id')} AS event_ready,
          (SELECT COALESCE(json_agg(json_build_object('name', s.name, 'occurrence', s.occurrence, 'seq', s.seq, 'kind', s.kind,
              'status', s.status, 'output', s.output, 'attempts', s.attempts) ORDER BY s.seq, s.kind <> 'patch', s.started_at), '[]')
            FROM ${steps} s WHERE s.run_id = r.id) AS steps`;
  // step.attempt counts an execution that crashed in a step (Temporal does) without a write at
  // each step's start: the load already writes the run row, and the reaper's entry in the driving
  // job's errors (its lease token, kind lease_expired or worker_gone) tells whether the execution
  // that last loaded the run (loaded_token) crashed; one that crashed before its load never ran
  // a step and counts nothing. crashes counts such executions in a row; a step commit (which
  // writes the run row anyway) sets it back to 0, so it is what the steps an execution starts
  // before its first commit add to their attempt (context.ts).
  const countCrash = `crashes = CASE WHEN r.loaded_token IS DISTINCT FROM j.lease_token AND EXISTS (
              SELECT 1 FROM jsonb_array_elements(j.errors) e
              WHERE e->>'token' = r.loaded_token::text AND e->>'kind' IN ('lease_expired', 'worker_gone'))
            THEN r.crashes + 1 ELSE r.crashes END, loaded_token = j.lease_token`;

  return {
    // One execution's load, step commit or completion goes out alone as a single-row statement
    // (load, commitStep, completeRun), several as one of arrays (loadMany, commitSteps,
    // completeRuns). A statement of arrays is planned for each execution: its generic plan
    // assumes ten rows, so PostgreSQL keeps choosing custom plans for small batches, about half a
    // millisecond of planning a lone execution (a resume on a quiet worker) would pay each time.
    // What an execution starts from: the run as it was (a sleeping or waiting run is taken back
    // to running, under the lease: marked), its steps and the database's clock. event_ready: an
    // event the run waits for has arrived (the wake-up's cause, for metrics).
    load: {
      name: statementName(schema, `wf_load`),
      text: `WITH m AS (
          UPDATE ${runs} r SET state = 'running', wait_event = NULL, wake_at = NULL, updated_at = now(), ${countCrash}
          FROM ${jobs} j
          WHERE r.id = $3::bigint AND r.state IN ('running', 'sleeping', 'waiting') AND ${BEFORE_DEADLINE} AND j.id = r.job_id
            AND j.id = $1::bigint AND j.lease_token = $2::bigint AND j.state IN ${LIVE}
          RETURNING r.id, r.crashes)
        SELECT EXISTS (SELECT 1 FROM m) AS marked, COALESCE((SELECT crashes FROM m), 0) AS crashes, r.id::text, r.name, r.tenant_id, r.input, r.state, r.job_id::text, r.output, r.wait_event, r.parent_run_id::text,
          ${loadColumns}
        FROM ${runs} r WHERE r.id = $3::bigint`,
    },
    // What executions start from, several in one statement ($1 job ids, $2 tokens, $3 run ids,
    // one per execution): each run as it was (a sleeping or waiting run is taken back to running,
    // under its lease: marked), its steps and the database's clock. event_ready: an event the run
    // waits for has arrived (the wake-up's cause, for metrics). ord: the position asked.
    loadMany: {
      name: statementName(schema, `wf_load_many`),
      text: `WITH i AS (
          SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS i(job_id, token, run_id, ord)),
        m AS (
          UPDATE ${runs} r SET state = 'running', wait_event = NULL, wake_at = NULL, updated_at = now(), ${countCrash}
          FROM i, ${jobs} j
          WHERE r.id = i.run_id AND r.state IN ('running', 'sleeping', 'waiting') AND ${BEFORE_DEADLINE} AND j.id = r.job_id
            AND j.id = i.job_id AND j.lease_token = i.token AND j.state IN ${LIVE}
          RETURNING r.id, r.crashes)
        SELECT i.ord::int, EXISTS (SELECT 1 FROM m WHERE m.id = r.id) AS marked,
          COALESCE((SELECT m.crashes FROM m WHERE m.id = r.id), 0) AS crashes, r.id::text, r.name, r.tenant_id, r.input, r.state,
          r.job_id::text, r.output, r.wait_event, r.parent_run_id::text,
          ${loadColumns}
        FROM i JOIN ${runs} r ON r.id = i.run_id`,
    },
    // A step's output: one insert wins (a failed row is taken over); the loser gets no row
    // back and reads the winner's. $4 name, $5 occurrence, $6 seq, $7 output, $8 started.
    commitStep: {
      name: statementName(schema, `wf_commit_step`),
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
      name: statementName(schema, `wf_commit_steps`),
      text: `WITH i AS (
          SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::int[], $6::int[], $7::text[],
            $8::timestamptz[]) WITH ORDINALITY AS i(job_id, token, run_id, name, occurrence, seq, output, started_at, ord)),
        fence AS (
          SELECT i.* FROM i JOIN ${jobs} j ON j.id = i.job_id JOIN ${runs} r ON r.id = i.run_id AND r.job_id = j.id
          WHERE j.lease_token = i.token AND j.state IN ${LIVE} AND r.state = 'running' AND ${BEFORE_DEADLINE}
          ORDER BY j.id ${FENCE_LOCKS}),
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
          UPDATE ${runs} r SET progress = GREATEST(r.progress, a.seq + 1), crashes = 0, updated_at = now()
          FROM (SELECT run_id, max(seq) AS seq FROM ins GROUP BY run_id) a WHERE r.id = a.run_id)
        SELECT i.ord::int, EXISTS (SELECT 1 FROM fence f WHERE f.ord = i.ord) AS fenced_in, w.run_id IS NOT NULL AS won, w.output
        FROM i LEFT JOIN (SELECT p.ord, ins.run_id, ins.output FROM pick p JOIN ins USING (run_id, name, occurrence)) w ON w.ord = i.ord`,
    },
    readStep: {
      name: statementName(schema, `wf_read_step`),
      text: `SELECT kind, status, output FROM ${steps} WHERE run_id = $1::bigint AND name = $2 AND occurrence = $3`,
    },
    // A failed attempt of a step, for its history (the job records the failure itself).
    failStep: {
      name: statementName(schema, `wf_fail_step`),
      text: `WITH ${fence}
        INSERT INTO ${steps} AS s (run_id, name, occurrence, seq, kind, status, error, attempts, started_at, finished_at)
        SELECT $3::bigint, $4, $5, $6, 'step', 'failed', $7::jsonb, 1, $8::timestamptz, now() FROM fence
        ON CONFLICT (run_id, name, occurrence) DO UPDATE SET
          error = EXCLUDED.error, seq = EXCLUDED.seq, attempts = s.attempts + 1,
          started_at = EXCLUDED.started_at, finished_at = now(), updated_at = now()
        WHERE s.status = 'failed'`,
    },
    // A ctx.patched() marker ($4 its name, $5 the position of the call after it): idempotent, so
    // steps running together that reach it race harmlessly.
    markPatch: {
      name: statementName(schema, `wf_mark_patch`),
      text: `WITH ${fence},
        ins AS (
          INSERT INTO ${steps} (run_id, name, occurrence, seq, kind, status, output, attempts, finished_at)
          SELECT $3::bigint, $4, 1, $5, 'patch', 'succeeded', 'true'::jsonb, 1, now() FROM fence
          ON CONFLICT (run_id, name, occurrence) DO NOTHING)
        SELECT ${fenced} AS fenced_in`,
    },
    // A run whose history its code cannot replay stops, blocked, with $4 the reason (jsonb).
    // Its driving job then completes: nothing retries a divergence; a replay resumes the run.
    blockRun: {
      name: statementName(schema, `wf_block_run`),
      text: `WITH ${fence}
        UPDATE ${runs} r SET state = 'blocked', blocked_reason = $4::jsonb, updated_at = now()
        WHERE r.id = $3::bigint AND ${fenced}
        RETURNING r.id`,
    },
    // The run's output; $4 output. Answers nothing when fenced, cancelled or already over.
    completeRun: {
      name: statementName(schema, `wf_complete_run`),
      text: `WITH ${fence}
        UPDATE ${runs} r SET state = 'succeeded', output = $4::jsonb, finished_at = now(), updated_at = now()
        WHERE r.id = $3::bigint AND ${fenced}
        RETURNING r.output`,
    },
    // Runs' outputs, several in one statement ($1 job ids, $2 tokens, $3 run ids, $4 outputs),
    // each fenced by its own lease (locked in job id order, as commitSteps). Answers a row for
    // each run completed; none for one fenced off, cancelled or already over.
    completeRuns: {
      name: statementName(schema, `wf_complete_runs`),
      text: `WITH i AS (
          SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[]) WITH ORDINALITY AS i(job_id, token, run_id, output, ord)),
        fence AS (
          SELECT i.* FROM i JOIN ${jobs} j ON j.id = i.job_id JOIN ${runs} r ON r.id = i.run_id AND r.job_id = j.id
          WHERE j.lease_token = i.token AND j.state IN ${LIVE} AND r.state = 'running' AND ${BEFORE_DEADLINE}
          ORDER BY j.id ${FENCE_LOCKS})
        UPDATE ${runs} r SET state = 'succeeded', output = f.output::jsonb, finished_at = now(), updated_at = now()
        FROM fence f WHERE r.id = f.run_id
        RETURNING f.ord::int, r.output`,
    },
    // Why a fenced write was refused: the run's state, whether it is past its deadline and whether the lease is still current.
    why: {
      name: statementName(schema, `wf_why`),
      text: `SELECT r.state, r.output, r.job_id = $1::bigint AS ours, NOT ${BEFORE_DEADLINE} AS past_deadline,
          EXISTS (SELECT 1 FROM ${jobs} j WHERE j.id = $1::bigint AND j.lease_token = $2::bigint AND j.state IN ${LIVE}) AS lease_current
        FROM ${runs} r WHERE r.id = $3::bigint`,
    },
  } as const;
}

export type WorkflowExecutionQueries = ReturnType<typeof workflowExecutionQueries>;
