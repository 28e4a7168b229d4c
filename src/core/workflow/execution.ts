// One execution of a workflow run, driven by one lease of its job: runs the function
// from the top, answering completed steps from the run's history and committing each
// new step's output (fenced by the lease) before going on. A wait ends the execution:
// the job is given back (attempt refunded) due at the wake-up, and the runner writes nothing.

import type { RunLease, WorkflowStore } from '../../driver/workflow-store.ts';
import { BatonError, NonDeterminismError, TerminalError } from '../../types/errors.ts';
import { isJobId } from '../../types/job.ts';
import type { ChildSpec, WorkflowFn } from '../../types/workflow.ts';
import type { JobContext } from '../handler.ts';
import type { Tracing } from '../tracing.ts';
import type { WorkflowBatcher } from './batcher.ts';
import { Execution } from './context.ts';
import { refusalOf } from './deadline.ts';
import { Stop, serialise, stopOrThrow, stopResult } from './outcome.ts';

/** What this process did for workflows: steps executed, step replays avoided, resumes by cause (`stats().workflows`). */
export interface WorkflowCounters {
  stepsExecuted: number;
  stepReplaysAvoided: number;
  resumes: { sleep: number; event: number; timeout: number; retry: number };
}

export interface ExecutionDeps {
  store: WorkflowStore;
  /** Loads, step commits and completions, batched with other executions of this process. */
  batch: Pick<WorkflowBatcher, 'load' | 'commitStep' | 'completeRun'>;
  counters: WorkflowCounters;
  /** Wakes workers of `queue` (this process and, by NOTIFY, others). */
  wake: (queue: string) => void;
  /** Starts (or finds, by idempotency key) the children of ctx.all; answers their ids in order (`job:<id>` for a plain job). */
  startChildren: (parent: { runId: string; tenantId: string }, key: string, children: ChildSpec[]) => Promise<string[]>;
  /** Executions in progress in this process, by run (a local cancel aborts them). */
  running?: Map<string, AbortController>;
  /** The workflow's input schema: why it refuses `input`, or null when it accepts it. */
  checkInput?: (input: unknown) => string | null;
  /** Spans of the steps executed (not of those answered from history); absent: none. */
  tracing?: Pick<Tracing, 'startStep'>;
}

/** The job handler of a workflow: runs one execution of the run named in the job's payload. */
export async function executeRun(fn: WorkflowFn, ctx: JobContext, d: ExecutionDeps): Promise<unknown> {
  const runId = String((ctx.payload as { runId?: unknown } | null)?.runId ?? '');
  if (!isJobId(runId))
    throw new TerminalError(`a workflow job's payload must be { runId }, got ${JSON.stringify(ctx.payload)?.slice(0, 80)}`);
  const lease: RunLease = { jobId: ctx.job.id, token: ctx.token, runId };
  const run = await d.batch.load(lease);
  if (!run) throw new TerminalError(`workflow run ${runId} does not exist`);
  if (run.state === 'succeeded') return run.output;
  if (run.state === 'cancelled') return { cancelled: true };
  // Blocked by an execution that died before its job's completion: nothing more to do.
  if (run.state === 'blocked') return { blocked: true };
  if (!run.marked) return stopOrThrow(await refusalOf(d, lease), lease);
  if (run.state === 'sleeping') d.counters.resumes.sleep++;
  else if (run.state === 'waiting') d.counters.resumes[run.eventReady ? 'event' : 'timeout']++;
  else if (ctx.job.attempt > 1) d.counters.resumes.retry++;
  // Before the run's first step only: a run already under way (its steps' effects done) is not
  // dead-lettered by a schema tightened since it started.
  const why = d.checkInput && run.steps.length === 0 ? d.checkInput(run.input) : null;
  if (why !== null) throw new TerminalError(`the input of workflow "${run.name}" is invalid: ${why}`);

  const cancel = new AbortController();
  d.running?.set(runId, cancel);
  const exec = new Execution(run, lease, ctx, d, AbortSignal.any([ctx.signal, cancel.signal]));
  const deadline = deadlineTimer(run, cancel);
  try {
    const output = await runToEnd(fn, exec);
    exec.ensureOpen();
    exec.ensureHistoryUsed();
    if (exec.divergence) throw new NonDeterminismError(exec.divergence.message);
    const text = serialise(output, 'the workflow output');
    const done = await d.batch.completeRun({ ...lease, output: text });
    if (done.ok) {
      if (run.parentRunId) await wakeParent(d, runId);
      return done.output;
    }
    return stopOrThrow(await refusalOf(d, lease), lease);
  } catch (err) {
    // Whatever the function threw after the execution ended (a wait, a cancel) is its echo.
    if (exec.ended instanceof Stop) return exec.ended.result;
    if (exec.ended) throw exec.ended;
    if (err instanceof Stop) return err.result;
    if (exec.divergence) return block(exec, lease, d);
    // Cancelled while a step ran: the step gave up on its signal; the run says why. A failure
    // past the run's deadline ends it timed_out rather than in a retry, or in a dead letter on
    // the last attempt (the database clock decides; runs without a deadline pay nothing here).
    if (exec.signal.aborted || run.deadlineAt !== null) {
      const r = await refusalOf(d, lease).catch(() => null);
      if (r?.kind === 'cancelled' || r?.kind === 'timed_out') return stopResult(r);
    }
    throw err;
  } finally {
    if (d.running?.get(runId) === cancel) d.running.delete(runId);
    if (deadline) clearTimeout(deadline);
  }
}

/**
 * Runs the function until it settles or the execution suspends at its waits. Steps still in
 * flight when it settles finish first: a sibling's output committed while another step threw is
 * memoized, so the retry runs only what did not finish; every commit stays fenced by the lease.
 */
async function runToEnd(fn: WorkflowFn, exec: Execution): Promise<unknown> {
  const settled = Promise.resolve()
    .then(() => fn(exec))
    .then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
  const r = await Promise.race([settled, exec.parking.ended]);
  await exec.parking.finish();
  await exec.parking.idle();
  if ('error' in r) throw r.error;
  return r.value;
}

/** The run's history cannot be replayed by this code: the run stops, blocked with the reason, and the job completes. */
async function block(exec: Execution, lease: RunLease, d: ExecutionDeps): Promise<unknown> {
  const reason = exec.divergence;
  const res = await d.store.workflowBlockRun({ ...lease, reason: JSON.stringify(reason) });
  if (!res.ok) return stopOrThrow(await refusalOf(d, lease), lease);
  return { blocked: reason };
}

/** Longest delay setTimeout keeps (a longer one fires at once); an execution never lasts that long. */
const TIMER_MAX_MS = 2_147_483_647;

/**
 * Aborts the steps' signal at the run's deadline, so a step that honours it stops then rather
 * than running on for an output that would be refused. Timed from the database clock of the
 * load (deadline minus its now), started after the load answered: it never fires before the
 * deadline. Null for a run without a deadline.
 */
function deadlineTimer(run: { id: string; deadlineAt: Date | null; nowMs: number }, cancel: AbortController): NodeJS.Timeout | null {
  if (run.deadlineAt === null) return null;
  const ms = Math.max(0, run.deadlineAt.getTime() - run.nowMs);
  if (ms > TIMER_MAX_MS) return null;
  const t = setTimeout(() => cancel.abort(new BatonError('RUN_STATE_CONFLICT', `workflow run ${run.id} reached its deadline`)), ms);
  t.unref();
  return t;
}

/** A child run finished: its waiting parent is due now (best effort: the parent also polls). */
export async function wakeParent(d: Pick<ExecutionDeps, 'store' | 'wake'>, runId: string): Promise<void> {
  const queue = await d.store.workflowWakeParent({ runId }).catch(() => null);
  if (queue) d.wake(queue);
}
