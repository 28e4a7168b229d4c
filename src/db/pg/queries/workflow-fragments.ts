// What every workflow statement is built from: the tables, the lease fence and the state a
// reader sees. Every write an execution makes is fenced by its driving job's lease
// token AND by the run still running: `fence` locks both rows for the statement, so a
// reclaim or a cancel either happened before it (nothing is written) or waits for it. It
// locks the run row first, then the job row (the order of its locking clauses), as the
// store's transactions (cancel, replay, suspend, events) do: the other way round, a fence and
// a cancel could each hold one row and wait for the other (a deadlock). The run row is taken
// FOR NO KEY UPDATE, not shared: the writes go on to update it (progress), and two fenced
// writes of one run at once (parallel steps) that each held it shared would each wait for the
// other's share to update it, a deadlock PostgreSQL breaks by failing one; taken exclusively,
// they queue. NO KEY: a step's insert (its foreign key shares the run row's key) is not held up.

export const LIVE = `('leased', 'running')`;

/** The fence's row locks: the run row, then the driving job's (see the head of this file). */
export const FENCE_LOCKS = 'FOR NO KEY UPDATE OF r FOR SHARE OF j';

/** The run `r` has no deadline or has not reached it (migration 0034): its executions may still write. */
export const BEFORE_DEADLINE = `(r.deadline_at IS NULL OR r.deadline_at > now())`;

/** The event names a wait step `t` waits for: rows of earlier versions keep one, in wait_event. */
export const waitNames = (t: string) => `COALESCE(${t}.wait_events, ARRAY[${t}.wait_event])`;

/**
 * Event `e` can end the wait of step `t`: one of its names, its payload contains the wait's match,
 * and it arrived (database clock, at its send) no later than the wait's deadline: whoever resumes
 * first, a timeout is decided at the deadline.
 */
export const eventEndsWait = (t: string) =>
  `e.name = ANY (${waitNames(t)}) AND (${t}.wait_match IS NULL OR e.payload @> ${t}.wait_match)
    AND (${t}.wake_at IS NULL OR e.created_at <= ${t}.wake_at)`;

export function workflowFragments(schema: string) {
  const runs = `${schema}.workflow_runs`;
  const steps = `${schema}.workflow_steps`;
  const events = `${schema}.workflow_events`;
  const jobs = `${schema}.jobs`;
  // $1 job id, $2 token, $3 run id.
  const fence = `fence AS (
      SELECT j.id FROM ${jobs} j JOIN ${runs} r ON r.job_id = j.id
      WHERE j.id = $1::bigint AND j.lease_token = $2::bigint AND j.state IN ${LIVE} AND r.id = $3::bigint AND r.state = 'running'
        AND ${BEFORE_DEADLINE}
      ${FENCE_LOCKS})`;
  const fenced = `EXISTS (SELECT 1 FROM fence)`;
  // The state a reader sees: dead-lettering and a cancel through the jobs API are the job's; a
  // live run past its deadline is timed_out from that instant, before any execution records it.
  const runState = `CASE WHEN r.state IN ('running', 'sleeping', 'waiting') AND j.state IN ('dead_lettered', 'cancelled')
      THEN j.state WHEN r.state IN ('running', 'sleeping', 'waiting') AND NOT ${BEFORE_DEADLINE} THEN 'timed_out' ELSE r.state END`;
  const advance = (seq: string) =>
    `UPDATE ${runs} SET progress = GREATEST(progress, ${seq} + 1), crashes = 0, updated_at = now() WHERE id = $3::bigint`;
  // An event not consumed ends one of run `runId`'s waiting event steps: any of the waits parked
  // together (a parallel execution), each with its own names, match and deadline.
  const eventEndsAWait = (runId: string) => `EXISTS (
      SELECT 1 FROM ${events} e JOIN ${steps} s ON s.run_id = e.run_id AND s.kind = 'event' AND s.status = 'waiting'
      WHERE e.run_id = ${runId} AND e.consumed_by IS NULL AND ${eventEndsWait('s')})`;
  return { runs, steps, events, jobs, fence, fenced, runState, advance, eventEndsAWait };
}
