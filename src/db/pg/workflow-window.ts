// A workflow run's start with debounce or throttle (docs/debounce.md, "Workflow runs"): the same
// key lock and decision as a job's (underKeyLock, job-window.ts), whose target is a run and its
// driving job. Keys of runs live in their own space of job_windows (runKeyQueue), so a job and a
// run never fold into each other. A fold rewrites the pending run's input (what its first
// execution loads) and its driving job's run_at and trace context in one statement.

import type { WorkflowStore } from '../../driver/workflow-store.ts';
import type { EnqueueWindow } from '../../types/job.ts';
import type { RunSummary, StartRunResult } from '../../types/workflow.ts';
import { underKeyLock, type WindowTarget } from './job-window.ts';
import type { Queryable } from './pool.ts';
import type { JobWindowQueries } from './queries/job-window.ts';
import type { WorkflowRunQueries } from './queries/workflow-run.ts';
import { queryRows } from './query-rows.ts';
import { type SummaryRow, toSummary } from './workflow-rows.ts';

type StartParams = Parameters<WorkflowStore['workflowStartRun']>[0];

/**
 * The `queue` of a run key's row in job_windows: the workflow's queue and `#runs`. A queue name
 * cannot contain `#` (NAME_PATTERN), so no job's key shares the row: a plain enqueue's fold
 * would otherwise overwrite a driving job's payload.
 */
export const runKeyQueue = (queue: string): string => `${queue}#runs`;

/** On `on`, a transaction the caller holds (the key stays locked until it commits). */
export async function startWindowed(
  on: Queryable,
  q: { run: WorkflowRunQueries; window: JobWindowQueries },
  p: StartParams & { window: EnqueueWindow },
): Promise<StartRunResult> {
  const trace = p.traceContext ? JSON.stringify(p.traceContext) : null;
  const summary = async (id: string): Promise<RunSummary> => {
    const [row] = await queryRows<SummaryRow>(on, q.run.summary, [id]);
    return toSummary(row as SummaryRow);
  };
  const target: WindowTarget<RunSummary> = {
    create: async (runAt) => {
      // A windowed start has no idempotency key (refused with one), so the insert always inserts.
      const [run] = await queryRows<{ id: string }>(on, q.run.insertRun, [
        p.name,
        p.tenantId,
        p.input,
        null,
        p.parentRunId ?? null,
        p.runTimeoutMs ?? null,
        trace,
      ]);
      if (!run) throw new Error('wf_insert_run returned no row');
      const [job] = await queryRows<{ id: string; run_at: Date }>(on, q.run.insertJobAt, [
        p.tenantId,
        p.queue,
        p.jobType,
        run.id,
        p.maxAttempts,
        trace,
        new Date(runAt),
      ]);
      if (!job) throw new Error('wf_insert_job_at returned no row');
      await queryRows(on, q.run.linkJob, [run.id, job.id]);
      return { jobId: job.id, runAt: job.run_at.getTime(), value: await summary(run.id) };
    },
    fold: async (jobId, runAt) => {
      const [run] = await queryRows<{ id: string }>(on, q.run.foldRun, [jobId, p.input, trace, new Date(runAt), p.name]);
      return run ? summary(run.id) : null;
    },
    read: async (jobId) => {
      const [row] = await queryRows<SummaryRow>(on, q.run.runByJob, [jobId]);
      return row ? toSummary(row) : null;
    },
  };
  // Leading and throttle: a created run is due at once.
  const key = { tenantId: p.tenantId, queue: runKeyQueue(p.queue), window: p.window, dueAt: (now: number) => now };
  const out = await underKeyLock(on, q.window, key, target);
  return out.created ? { run: out.value, duplicate: false } : { run: out.value, duplicate: false, collapsedBy: out.collapsedBy };
}
