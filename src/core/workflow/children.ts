// The children of ctx.all: their start, ids as the run's history keeps them (a child run's id,
// `job:<id>` for a plain job) and their join. A join answers only once every child has finished,
// so the parent sees all outcomes at once and in the order it asked.

import type { WorkflowStore } from '../../driver/workflow-store.ts';
import { BatonError, TerminalError } from '../../types/errors.ts';
import type { EnqueueResult, JobSpec } from '../../types/job.ts';
import type { ChildResult, ChildSpec } from '../../types/workflow.ts';
import type { TraceCarrier } from '../tracing.ts';
import { jsonText } from './input.ts';
import { jobTypeOf } from './start.ts';

const JOB_CHILD = 'job:';
/** A plain job's id as a child of ctx.all. */
export const jobChildId = (jobId: string) => `${JOB_CHILD}${jobId}`;

/** A children wait re-checks this often even without a wake-up (a child dead-lettered by the reaper sends none). */
export const CHILDREN_POLL_MS = 30_000;
export const CHILDREN_MAX = 1_000;
const FINAL_CHILD_STATES: ReadonlySet<string> = new Set(['succeeded', 'dead_lettered', 'cancelled', 'timed_out']);

/** What starting children takes from the workflows service. */
export interface ChildStartDeps {
  store: WorkflowStore;
  enqueue: (spec: JobSpec) => Promise<EnqueueResult>;
  wake: (queue: string) => void;
  channelOf: (queue: string) => string;
  captureTrace?: () => TraceCarrier | null;
  /** Where a run of workflow `name` goes (WORKFLOW_NOT_FOUND when no process defined it). */
  target: (name: string) => Promise<{ queue: string; maxAttempts: number; runTimeoutMs: number | null }>;
}

/**
 * Children are started once per (parent, key, index): a re-executed start step finds them by
 * idempotency key. A plain job is answered as `job:<id>`, linked to the run (its finish wakes it).
 */
export async function startChildren(
  d: ChildStartDeps,
  parent: { runId: string; tenantId: string; queue: string },
  key: string,
  children: ChildSpec[],
): Promise<string[]> {
  const ids: string[] = [];
  const jobIds: string[] = [];
  for (const [i, child] of children.entries()) {
    if (child && typeof child === 'object' && 'job' in child) {
      const res = await d
        .enqueue({ ...child.job, tenantId: parent.tenantId, idempotencyKey: `child:${parent.runId}:${key}:${i}` })
        .catch((err: unknown) => {
          throw new TerminalError(`all "${key}": child ${i} is not a job Baton accepts`, { cause: err });
        });
      jobIds.push(res.job.id);
      ids.push(jobChildId(res.job.id));
      continue;
    }
    const def = await d.target(child?.workflow).catch((err: unknown) => {
      if (err instanceof BatonError && err.code === 'WORKFLOW_NOT_FOUND')
        throw new TerminalError(`all "${key}": child ${i} names no defined workflow (${JSON.stringify(child?.workflow)})`);
      throw err;
    });
    const res = await d.store.workflowStartRun({
      name: child.workflow,
      tenantId: parent.tenantId,
      input: jsonText(child.input, `the input of child ${i} of "${key}"`),
      idempotencyKey: `child:${parent.runId}:${key}:${i}`,
      queue: def.queue,
      jobType: jobTypeOf(child.workflow),
      maxAttempts: def.maxAttempts,
      parentRunId: parent.runId,
      runTimeoutMs: def.runTimeoutMs,
      // The parent's execution span: each child's executions continue it.
      traceContext: d.captureTrace?.() ?? null,
    });
    if (!res.duplicate) d.wake(def.queue);
    ids.push(res.run.id);
  }
  if (jobIds.length > 0) await d.store.workflowLinkChildJobs({ runId: parent.runId, jobIds, channel: d.channelOf(parent.queue) });
  return ids;
}

const plainJobIds = (ids: string[]) => ids.filter((id) => id.startsWith(JOB_CHILD)).map((id) => id.slice(JOB_CHILD.length));

/**
 * After the suspend of a children wait: true when the run must be woken to look again, because
 * every child has finished or a plain child job's outcome may be committing right now (its
 * finishing statement saw the run still running, so it woke nobody).
 */
export async function childrenMayBeOver(store: WorkflowStore, ids: string[]): Promise<boolean> {
  if ((await joinedChildren(store, ids)) !== null) return true;
  const jobIds = plainJobIds(ids);
  return jobIds.length > 0 && (await store.workflowChildJobsSettling({ jobIds }));
}

/** Every child's outcome in order once all have finished, else null. */
export async function joinedChildren(store: WorkflowStore, ids: string[]): Promise<ChildResult[] | null> {
  const runIds = ids.filter((id) => !id.startsWith(JOB_CHILD));
  const jobIds = plainJobIds(ids);
  const [runs, jobs] = await Promise.all([
    runIds.length > 0 ? store.workflowChildOutcomes({ runIds }) : [],
    jobIds.length > 0 ? store.workflowJobOutcomes({ jobIds }) : [],
  ]);
  const byRun = new Map(runs.map((r) => [r.id, { ...r, result: r.output }]));
  const byJob = new Map(jobs.map((j) => [j.id, j]));
  const out: ChildResult[] = [];
  for (const id of ids) {
    const job = id.startsWith(JOB_CHILD) ? id.slice(JOB_CHILD.length) : null;
    // A plain job deleted at its success (deleteOnSuccess) has no row left: it succeeded.
    const r = job ? (byJob.get(job) ?? { state: 'succeeded', result: null, lastError: null }) : byRun.get(id);
    if (!r || !FINAL_CHILD_STATES.has(r.state)) return null;
    const failed = (r.state === 'dead_lettered' || (job !== null && r.state === 'cancelled')) && r.lastError;
    out.push({
      runId: job ? null : id,
      jobId: job,
      state: r.state as ChildResult['state'],
      output: r.state === 'succeeded' ? (r.result ?? null) : null,
      error: failed ? { name: r.lastError!.name, message: r.lastError!.message } : null,
    });
  }
  return out;
}
