// Named queries of a run's deadline (runTimeoutMs, migration 0034): the run past it recorded as
// timed_out. Decided by the database clock alone, not by a lease: whichever execution meets the
// deadline first records it, and a repeat changes nothing.

import { statementName } from './statement-name.ts';
import { workflowFragments } from './workflow-fragments.ts';

export function workflowDeadlineQueries(schema: string) {
  const { runs, jobs } = workflowFragments(schema);
  return {
    // $1 the run. A parent waiting for it (ctx.all) is made due, as a child's finish does. The
    // run row is locked before any job row, as the fence does.
    timeOutRun: {
      name: statementName(schema, `wf_time_out_run`),
      text: `WITH t AS (
          UPDATE ${runs} r SET state = 'timed_out', wait_event = NULL, wake_at = NULL,
            finished_at = now(), updated_at = now()
          WHERE r.id = $1::bigint AND r.state IN ('running', 'sleeping', 'waiting') AND r.deadline_at <= now()
          RETURNING r.parent_run_id),
        parent AS (
          UPDATE ${jobs} j SET run_at = now(), updated_at = now()
          FROM ${runs} p WHERE p.id = (SELECT parent_run_id FROM t) AND p.state = 'waiting' AND j.id = p.job_id
            AND j.state = 'pending' AND j.run_at > now()
          RETURNING j.queue)
        SELECT EXISTS (SELECT 1 FROM t) AS timed_out, (SELECT queue FROM parent LIMIT 1) AS woke_queue`,
    },
  } as const;
}

export type WorkflowDeadlineQueries = ReturnType<typeof workflowDeadlineQueries>;
