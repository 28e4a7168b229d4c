// What every workflow statement is built from: the tables, the lease fence and the state a
// reader sees. Every write an execution makes is fenced by its driving job's lease
// token AND by the run still running: `fence` locks both rows (FOR SHARE) for the
// statement, so a reclaim or a cancel either happened before it (nothing is written) or
// waits for it. It locks the run row first, then the job row (the order of `OF r, j`), as
// the store's transactions (cancel, replay, suspend, events) do: the other way round, a
// fence and a cancel could each hold one row and wait for the other (a deadlock).

export const LIVE = `('leased', 'running')`;

export function workflowFragments(schema: string) {
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
  // The state a reader sees: dead-lettering and a cancel through the jobs API are the job's.
  const runState = `CASE WHEN r.state IN ('running', 'sleeping', 'waiting') AND j.state IN ('dead_lettered', 'cancelled')
      THEN j.state ELSE r.state END`;
  const advance = (seq: string) =>
    `UPDATE ${runs} SET progress = GREATEST(progress, ${seq} + 1), crashes = 0, updated_at = now() WHERE id = $3::bigint`;
  return { runs, steps, events, jobs, fence, fenced, runState, advance };
}
