// The children of ctx.all: ids as the run's history keeps them (a child run's id, `job:<id>` for a
// plain job) and their join. A join answers only once every child has finished, so the parent
// sees all outcomes at once and in the order it asked.

import type { WorkflowStore } from '../../driver/workflow-store.ts';
import type { ChildResult } from '../../types/workflow.ts';

const JOB_CHILD = 'job:';
/** A plain job's id as a child of ctx.all. */
export const jobChildId = (jobId: string) => `${JOB_CHILD}${jobId}`;

/** A children wait re-checks this often even without a wake-up (a child dead-lettered by the reaper sends none). */
export const CHILDREN_POLL_MS = 30_000;
export const CHILDREN_MAX = 1_000;
const FINAL_CHILD_STATES: ReadonlySet<string> = new Set(['succeeded', 'dead_lettered', 'cancelled', 'timed_out']);

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
