// Named queries of a run's waits: sleeps and event waits armed and finished, the children of
// ctx.all linked and looked at, and the suspend that gives the driving job back. The writes of
// an execution are fenced by its lease and the run still running (see workflow-fragments.ts).

import { recordFinishedSql } from './job-fragments.ts';
import { statementName } from './statement-name.ts';
import { eventEndsWait, LIVE, workflowFragments } from './workflow-fragments.ts';

/** A far run_at for a wait with no timeout: only an event moves it. */
export const NO_TIMEOUT_RUN_AT = `'9999-12-31T00:00:00Z'::timestamptz`;

export function workflowWaitQueries(schema: string) {
  const { runs, steps, events, jobs, fence, fenced, runState, advance, eventEndsAWait } = workflowFragments(schema);

  return {
    // Starts a sleep or an event wait, or finds it started: the wake-up time is set once, from
    // the database clock ($7 delay ms or $8 an instant; neither: no timeout), and so are an event
    // wait's names ($11; $10 the first, which earlier versions read) and match ($12). Returns the row.
    armWait: {
      name: statementName(schema, `wf_arm_wait`),
      text: `WITH ${fence}
        INSERT INTO ${steps} AS s (run_id, name, occurrence, seq, kind, status, wait_event, wait_events, wait_match, wake_at)
        SELECT $3::bigint, $4, $5, $6, $9, 'waiting', $10, $11::text[], $12::jsonb,
          COALESCE($8::timestamptz, now() + make_interval(secs => $7::double precision / 1000.0)) FROM fence
        ON CONFLICT (run_id, name, occurrence) DO UPDATE SET updated_at = s.updated_at,
          -- A children wait re-arms its safety-net poll on each execution.
          wake_at = CASE WHEN s.kind = 'children' AND s.status = 'waiting' THEN EXCLUDED.wake_at ELSE s.wake_at END
        RETURNING s.kind, s.status, s.output, s.wake_at, COALESCE(s.wake_at <= now(), false) AS due`,
    },
    // Ends a wait that is over: an event it takes consumed (oldest first; the names, match and
    // deadline armed with the step decide, see eventEndsWait), or its time come (output NULL:
    // timed out; a sleep). $4 name, $5 occurrence, $6 step key.
    finishWait: {
      name: statementName(schema, `wf_finish_wait`),
      text: `WITH ${fence},
        ev AS (
          SELECT e.id, e.name, e.payload FROM ${events} e
          JOIN ${steps} s ON s.run_id = e.run_id AND s.name = $4 AND s.occurrence = $5 AND s.status = 'waiting'
          WHERE e.run_id = $3::bigint AND e.consumed_by IS NULL AND ${eventEndsWait('s')} AND ${fenced}
          ORDER BY e.id LIMIT 1 FOR UPDATE OF e),
        done AS (
          UPDATE ${steps} s SET status = 'succeeded', attempts = s.attempts + 1, finished_at = now(), updated_at = now(),
            output = (SELECT jsonb_build_object('name', ev.name, 'payload', ev.payload) FROM ev)
          WHERE s.run_id = $3::bigint AND s.name = $4 AND s.occurrence = $5 AND s.status = 'waiting' AND ${fenced}
            AND (EXISTS (SELECT 1 FROM ev) OR s.wake_at <= now())
          RETURNING s.output, s.seq),
        used AS (UPDATE ${events} e SET consumed_by = $6 FROM ev WHERE e.id = ev.id AND EXISTS (SELECT 1 FROM done)),
        adv AS (${advance('(SELECT seq FROM done)')} AND EXISTS (SELECT 1 FROM done))
        SELECT ${fenced} AS fenced_in, EXISTS (SELECT 1 FROM done) AS done, (SELECT output FROM done) AS output`,
    },
    // Ends a wait with the output the execution worked out ($6), fenced like every write.
    completeWait: {
      name: statementName(schema, `wf_complete_wait`),
      text: `WITH ${fence},
        done AS (
          UPDATE ${steps} s SET status = 'succeeded', output = $6::jsonb, attempts = s.attempts + 1,
            finished_at = now(), updated_at = now()
          WHERE s.run_id = $3::bigint AND s.name = $4 AND s.occurrence = $5 AND s.status = 'waiting' AND ${fenced}
          RETURNING s.output, s.seq),
        adv AS (${advance('(SELECT seq FROM done)')} AND EXISTS (SELECT 1 FROM done))
        SELECT ${fenced} AS fenced_in, EXISTS (SELECT 1 FROM done) AS done, (SELECT output FROM done) AS output`,
    },
    // Suspend, 1 of 2 (in one transaction): the run row first (sendEvent locks it first too,
    // so an event sent meanwhile is seen by one side or the other). $4 state, $5 an event name
    // it waits for (shown in listings), $6 step names, $7 their occurrences: the waits parked
    // together, each keeping its names, match and wake-up on its step; the run wakes at the first.
    suspendRun: {
      name: statementName(schema, `wf_suspend_run`),
      text: `UPDATE ${runs} r SET state = $4, wait_event = $5,
          wake_at = (SELECT min(s.wake_at) FROM ${steps} s JOIN unnest($6::text[], $7::int[]) AS w(name, occurrence)
            ON s.name = w.name AND s.occurrence = w.occurrence WHERE s.run_id = r.id),
          updated_at = now()
        WHERE r.id = $3::bigint AND r.job_id = $1::bigint AND r.state = 'running' AND $2::bigint IS NOT NULL
        RETURNING r.state`,
    },
    // Suspend, 2 of 2: the driving job back to pending, its attempt refunded (waiting is not a
    // failure), due at the wake-up time (never after the run's deadline: the claim of this job
    // then times the run out), or now when an event that ends its wait is already here.
    // A job with a cancel request (migration 0020) is never pending again: nothing holds it once
    // the execution gives it back, so it is cancelled (and the run reads as cancelled).
    suspendJob: {
      name: statementName(schema, `wf_suspend_job`),
      text: `WITH w AS (UPDATE ${jobs} j SET
          state = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled' ELSE 'pending' END,
          finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN now() END,
          run_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN j.run_at
            WHEN ${eventEndsAWait('$3::bigint')} THEN now()
            ELSE (SELECT LEAST(COALESCE(r.wake_at, ${NO_TIMEOUT_RUN_AT}), r.deadline_at) FROM ${runs} r WHERE r.id = $3::bigint) END,
          attempt = greatest(j.attempt - 1, 0),
          lease_owner = NULL, lease_expires_at = NULL, started_at = NULL, updated_at = now()
        WHERE j.id = $1::bigint AND j.lease_token = $2::bigint AND j.state IN ${LIVE}
        RETURNING j.id, j.queue, j.state, j.state = 'pending' AND j.run_at <= now() AS due),
        ${recordFinishedSql(schema, 'w')}
        SELECT queue, due FROM w`,
    },
    // A waiting run's job is due now (workflowWakeRun: the children wait's re-check; an event
    // wakes its run inside sendEvent's own statement).
    wakeJob: {
      name: statementName(schema, `wf_wake_job`),
      text: `UPDATE ${jobs} SET run_at = now(), updated_at = now()
        WHERE id = $1::bigint AND state = 'pending' AND run_at > now() RETURNING queue`,
    },
    // Plain jobs a run awaits (ctx.all): linked to the run, and marked so that their finishing
    // statement makes the waiting run due (migration 0016's trigger). $3: the run's queue's channel.
    linkChildJobs: {
      name: statementName(schema, `wf_link_child_jobs`),
      text: `WITH l AS (
          INSERT INTO ${schema}.workflow_child_jobs (run_id, job_id, channel)
          SELECT $1::bigint, j, $3 FROM unnest($2::bigint[]) AS j ON CONFLICT DO NOTHING)
        UPDATE ${jobs} SET has_dependents = true WHERE id = ANY ($2::bigint[]) AND NOT has_dependents`,
    },
    jobOutcomes: {
      name: statementName(schema, `wf_job_outcomes`),
      text: `SELECT id::text, state, result, last_error FROM ${jobs} WHERE id = ANY ($1::bigint[])`,
    },
    // After a children wait's suspend: whether a plain child job ($1 the ids) that is not over is
    // being written right now (its row locked). Its finishing statement's wake-up (migration
    // 0016's trigger) ran before the suspend committed and saw the run still running, and its
    // own commit (a WAL flush) may land after the suspend's look at the outcomes: nobody would
    // wake the run until its poll. A row locked for another write (a heartbeat) only costs a
    // spurious wake-up. The lock is taken with SKIP LOCKED, so this never waits; a row that
    // finished since the snapshot fails the re-checked state and counts as settling too.
    childJobsSettling: {
      name: statementName(schema, `wf_child_jobs_settling`),
      text: `WITH open AS (
          SELECT id FROM ${jobs} WHERE id = ANY ($1::bigint[]) AND state NOT IN ('succeeded', 'dead_lettered', 'cancelled')),
        free AS (
          SELECT j.id FROM ${jobs} j WHERE j.id IN (SELECT id FROM open) AND j.state NOT IN ('succeeded', 'dead_lettered', 'cancelled')
          FOR SHARE OF j SKIP LOCKED)
        SELECT (SELECT count(*) FROM open) > (SELECT count(*) FROM free) AS settling`,
    },
    // How child runs stand ($1 their ids), with the last error of a dead-lettered one's job.
    childOutcomes: {
      name: statementName(schema, `wf_child_outcomes`),
      text: `SELECT r.id::text, ${runState} AS state, r.output, j.last_error
        FROM ${runs} r LEFT JOIN ${jobs} j ON j.id = r.job_id WHERE r.id = ANY ($1::bigint[])`,
    },
    // A child run finished: its parent, if waiting, is due now. $1 the child run.
    wakeParent: {
      name: statementName(schema, `wf_wake_parent`),
      text: `UPDATE ${jobs} j SET run_at = now(), updated_at = now()
        FROM ${runs} c JOIN ${runs} p ON p.id = c.parent_run_id
        WHERE c.id = $1::bigint AND p.state = 'waiting' AND j.id = p.job_id AND j.state = 'pending' AND j.run_at > now()
        RETURNING j.queue`,
    },
  } as const;
}

export type WorkflowWaitQueries = ReturnType<typeof workflowWaitQueries>;
