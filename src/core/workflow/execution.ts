// One execution of a workflow run, driven by one lease of its job: runs the function
// from the top, answering completed steps from the run's history and committing each
// new step's output (fenced by the lease) before going on. A wait ends the execution:
// the job is given back (attempt refunded) due at the wake-up, and the runner writes nothing.

import type { HistoryStep, Refusal, RunLease, WorkflowStore } from '../../driver/workflow-store.ts';
import { LeaseLostError, NonDeterminismError, OutcomeWritten, TerminalError } from '../../types/errors.ts';
import type { ChildResult, ChildSpec, StepContext, StepKind, WorkflowContext, WorkflowEvent, WorkflowFn } from '../../types/workflow.ts';
import { isJobId } from '../admin.ts';
import type { JobContext } from '../handler.ts';
import { DELAY_MS_MAX, jsonTextHasNul, RUN_AT_MAX, RUN_AT_MIN } from '../job-spec.ts';
import type { WorkflowBatcher } from './batcher.ts';

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
}

const JOB_CHILD = 'job:';

/** A children wait re-checks this often even without a wake-up (a child dead-lettered by the reaper sends none). */
export const CHILDREN_POLL_MS = 30_000;
export const CHILDREN_MAX = 1_000;
const FINAL_CHILD_STATES: ReadonlySet<string> = new Set(['succeeded', 'dead_lettered', 'cancelled']);

/** The execution ended because the run waits: the job was given back. */
class Suspended extends OutcomeWritten {}

/** The execution ends without error: the run was cancelled or finished elsewhere. */
class Stop extends Error {
  constructor(readonly result: unknown) {
    super('workflow execution stopped');
  }
}

/** A step's function threw. The cause keeps what it threw (TerminalError included). */
export class StepFailedError extends Error {
  constructor(key: string, cause: unknown) {
    const message = cause instanceof Error ? cause.message : String(cause);
    super(`step "${key}" failed: ${message}`, { cause });
    this.name = 'StepFailedError';
  }
}

const KEY_MAX_CHARS = 256;

function displayKey(name: string, occurrence: number): string {
  return occurrence === 1 ? name : `${name}#${occurrence}`;
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
  if (!run.marked) return stopOrThrow(await d.store.workflowRefusal(lease), lease);
  if (run.state === 'sleeping') d.counters.resumes.sleep++;
  else if (run.state === 'waiting') d.counters.resumes[run.eventReady ? 'event' : 'timeout']++;
  else if (ctx.job.attempt > 1) d.counters.resumes.retry++;

  const cancel = new AbortController();
  d.running?.set(runId, cancel);
  const exec = new Execution(run, lease, ctx, d, AbortSignal.any([ctx.signal, cancel.signal]));
  try {
    const output = await fn(exec);
    exec.ensureOpen();
    exec.ensureHistoryUsed();
    const text = serialise(output, 'the workflow output');
    const done = await d.batch.completeRun({ ...lease, output: text });
    if (done.ok) {
      if (run.parentRunId) await wakeParent(d, runId);
      return done.output;
    }
    return stopOrThrow(await d.store.workflowRefusal(lease), lease);
  } catch (err) {
    // Whatever the function threw after the execution ended (a wait, a cancel) is its echo.
    if (exec.ended instanceof Stop) return exec.ended.result;
    if (exec.ended) throw exec.ended;
    if (err instanceof Stop) return err.result;
    // Cancelled while a step ran: the step gave up on its signal; the run says why.
    if (exec.signal.aborted) {
      const r = await d.store.workflowRefusal(lease).catch(() => null);
      if (r?.kind === 'cancelled') return stopResult(r);
    }
    throw err;
  } finally {
    if (d.running?.get(runId) === cancel) d.running.delete(runId);
  }
}

/** A child run finished: its waiting parent is due now (best effort: the parent also polls). */
export async function wakeParent(d: Pick<ExecutionDeps, 'store' | 'wake'>, runId: string): Promise<void> {
  const queue = await d.store.workflowWakeParent({ runId }).catch(() => null);
  if (queue) d.wake(queue);
}

/** What the job ends with when the run refused this execution's write; throws when the lease is gone. */
function stopOrThrow(r: Refusal, lease: RunLease): unknown {
  if (r.kind === 'lease_lost') throw new LeaseLostError(lease.jobId, lease.token);
  return stopResult(r);
}

function stopResult(r: Exclude<Refusal, { kind: 'lease_lost' }>): unknown {
  if (r.kind === 'cancelled') return { cancelled: true };
  if (r.kind === 'superseded') return { superseded: true };
  return r.output;
}

function serialise(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value === undefined ? null : value);
  } catch (error) {
    throw new TerminalError(`${what} is not JSON-serialisable`, { cause: error });
  }
  if (text === undefined) return 'null';
  if (jsonTextHasNul(text)) throw new TerminalError(`${what} contains NUL (\\u0000) characters`);
  return text;
}

class Execution implements WorkflowContext {
  readonly runId: string;
  readonly name: string;
  readonly tenantId: string;
  readonly input: unknown;
  readonly token: string;
  /** Set once the execution ended (suspended or stopped): every later call throws it again. */
  ended: Suspended | Stop | null = null;
  readonly #lease: RunLease;
  readonly #d: ExecutionDeps;
  /** Completed or started entries of the run's history, in order: the n-th call must match the n-th. */
  readonly #history: HistoryStep[];
  /** Failed attempts so far, by step key. */
  readonly #failed = new Map<string, number>();
  readonly #occurrences = new Map<string, number>();
  /** The job's signal, also aborted when the run is cancelled from this process. */
  readonly #signal: AbortSignal;
  #calls = 0;
  #busy = false;

  constructor(
    run: { id: string; name: string; tenantId: string; input: unknown; steps: HistoryStep[] },
    lease: RunLease,
    job: JobContext,
    d: ExecutionDeps,
    signal: AbortSignal,
  ) {
    this.#signal = signal;
    this.runId = run.id;
    this.name = run.name;
    this.tenantId = run.tenantId;
    this.input = run.input;
    this.token = job.token;
    this.#lease = lease;
    this.#d = d;
    this.#history = run.steps.filter((s) => s.status !== 'failed');
    for (const s of run.steps) if (s.status === 'failed') this.#failed.set(displayKey(s.name, s.occurrence), s.attempts);
  }

  get signal(): AbortSignal {
    return this.#signal;
  }

  ensureOpen(): void {
    if (this.ended) throw this.ended;
  }

  /** A function that returns before reaching every step its history holds has changed. */
  ensureHistoryUsed(): void {
    const next = this.#history[this.#calls];
    if (next) {
      throw new NonDeterminismError(
        `workflow "${this.name}" run ${this.runId} is not deterministic: it returned where its history has step ` +
          `"${displayKey(next.name, next.occurrence)}" (position ${next.seq + 1})`,
      );
    }
  }

  /** Claims the next position for `key`, checking it against the history; returns the history entry there. */
  #enter(key: string, kind: StepKind): { occurrence: number; seq: number; past: HistoryStep | undefined } {
    this.ensureOpen();
    if (typeof key !== 'string' || key.length === 0 || key.length > KEY_MAX_CHARS || key.includes('\u0000')) {
      throw new TerminalError(`a step key must be a string of 1-${KEY_MAX_CHARS} characters without NUL`);
    }
    if (this.#busy) {
      throw new TerminalError(`step "${key}" was called while another step was running: a run's steps run one at a time`);
    }
    const occurrence = (this.#occurrences.get(key) ?? 0) + 1;
    this.#occurrences.set(key, occurrence);
    const seq = this.#calls++;
    const past = this.#history[seq];
    if (past && (past.name !== key || past.occurrence !== occurrence || past.kind !== kind)) {
      throw new NonDeterminismError(
        `workflow "${this.name}" run ${this.runId} is not deterministic: at position ${seq + 1} the code reached ` +
          `${kind} "${displayKey(key, occurrence)}" where its history has ${past.kind} "${displayKey(past.name, past.occurrence)}"`,
      );
    }
    return { occurrence, seq, past };
  }

  async #refused(): Promise<never> {
    const r = await this.#d.store.workflowRefusal(this.#lease);
    if (r.kind === 'lease_lost') throw new LeaseLostError(this.#lease.jobId, this.#lease.token);
    this.ended = new Stop(stopResult(r));
    throw this.ended;
  }

  async step<T>(key: string, fn: (step: StepContext) => T | Promise<T>): Promise<T> {
    const { occurrence, seq, past } = this.#enter(key, 'step');
    if (past?.status === 'succeeded') {
      this.#d.counters.stepReplaysAvoided++;
      return past.output as T;
    }
    const shown = displayKey(key, occurrence);
    const startedAt = new Date();
    let value: unknown;
    this.#busy = true;
    try {
      value = await fn({
        idempotencyKey: `${this.runId}:${shown}`,
        attempt: (this.#failed.get(shown) ?? 0) + 1,
        signal: this.#signal,
      });
    } catch (err) {
      this.#busy = false;
      const error = { name: err instanceof Error ? err.name : 'Error', message: err instanceof Error ? err.message : String(err) };
      // Recorded for the run's history only; the job's failure write is what counts.
      await this.#d.store.workflowFailStep({ ...this.#lease, name: key, occurrence, seq, error, startedAt }).catch(() => undefined);
      throw new StepFailedError(shown, err);
    }
    this.#busy = false;
    this.ensureOpen();
    const output = serialise(value, `the output of step "${shown}"`);
    const res = await this.#d.batch.commitStep({ ...this.#lease, name: key, occurrence, seq, output, startedAt });
    if (!res.ok) return this.#refused();
    this.#d.counters.stepsExecuted++;
    if (!res.won && res.output === undefined) {
      throw new NonDeterminismError(`workflow "${this.name}" run ${this.runId}: "${shown}" is not a step in the run's history`);
    }
    return res.output as T;
  }

  sleep(key: string, ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0 || ms > DELAY_MS_MAX) {
      return Promise.reject(new TerminalError(`sleep "${key}": ms must be a number from 0 to ${DELAY_MS_MAX}`));
    }
    return this.#wait(key, 'sleep', null, Math.ceil(ms), null).then(() => undefined);
  }

  sleepUntil(key: string, until: Date): Promise<void> {
    const t = until instanceof Date ? until.getTime() : Number.NaN;
    if (Number.isNaN(t) || t < Date.parse(RUN_AT_MIN) || t > Date.parse(RUN_AT_MAX)) {
      return Promise.reject(new TerminalError(`sleepUntil "${key}": until must be a valid Date from ${RUN_AT_MIN} to ${RUN_AT_MAX}`));
    }
    return this.#wait(key, 'sleep', null, null, until).then(() => undefined);
  }

  waitForEvent<T = unknown>(key: string, eventName: string, opts: { timeoutMs?: number } = {}): Promise<WorkflowEvent<T> | null> {
    const { timeoutMs } = opts;
    if (timeoutMs !== undefined && (!Number.isFinite(timeoutMs) || timeoutMs < 0 || timeoutMs > DELAY_MS_MAX)) {
      return Promise.reject(new TerminalError(`waitForEvent "${key}": timeoutMs must be a number from 0 to ${DELAY_MS_MAX}`));
    }
    if (typeof eventName !== 'string' || eventName.length === 0) {
      return Promise.reject(new TerminalError(`waitForEvent "${key}": the event name must be a non-empty string`));
    }
    return this.#wait(
      key,
      'event',
      eventName,
      timeoutMs === undefined ? null : Math.ceil(timeoutMs),
      null,
    ) as Promise<WorkflowEvent<T> | null>;
  }

  async all<T = unknown>(key: string, children: ChildSpec[]): Promise<Array<ChildResult<T>>> {
    if (!Array.isArray(children) || children.length === 0 || children.length > CHILDREN_MAX) {
      throw new TerminalError(`all "${key}": children must be an array of 1 to ${CHILDREN_MAX} { workflow, input? } or { job }`);
    }
    const parent = { runId: this.runId, tenantId: this.tenantId };
    const ids = await this.step<string[]>(key, () => this.#d.startChildren(parent, key, children));
    const { occurrence, seq, past } = this.#enter(`${key}:join`, 'children');
    if (past?.status === 'succeeded') {
      this.#d.counters.stepReplaysAvoided++;
      return past.output as Array<ChildResult<T>>;
    }
    const step = { ...this.#lease, name: `${key}:join`, occurrence };
    const armed = await this.#d.store.workflowArmWait({
      ...step,
      seq,
      kind: 'children',
      waitEvent: null,
      delayMs: CHILDREN_POLL_MS,
      until: null,
    });
    if (!armed.ok) return this.#refused();
    if (armed.kind !== 'children')
      throw new NonDeterminismError(`workflow "${this.name}" run ${this.runId}: "${key}:join" is not a children wait`);
    if (armed.status === 'succeeded') return armed.output as Array<ChildResult<T>>;
    const joined = await this.#joined(ids);
    if (joined) {
      const fin = await this.#d.store.workflowCompleteWait({ ...step, output: JSON.stringify(joined) });
      if (!fin.ok) return this.#refused();
      if (fin.done) return fin.output as Array<ChildResult<T>>;
    }
    const s = await this.#d.store.workflowSuspend({ ...step, state: 'waiting', waitEvent: null });
    if (!s.ok) return this.#refused();
    // A child that finished between the look and the suspend saw this run still running and
    // woke nobody: look again now that the run is waiting.
    if (s.due || (await this.#joined(ids).catch(() => null))) {
      const queue = s.due ? s.queue : await this.#d.store.workflowWakeRun({ jobId: this.#lease.jobId });
      if (queue) this.#d.wake(queue);
    }
    this.ended = new Suspended(`workflow run ${this.runId} suspended until its children "${key}" finish`);
    throw this.ended;
  }

  /** Every child's outcome in order once all have finished, else null. */
  async #joined(ids: string[]): Promise<ChildResult[] | null> {
    const runIds = ids.filter((id) => !id.startsWith(JOB_CHILD));
    const jobIds = ids.filter((id) => id.startsWith(JOB_CHILD)).map((id) => id.slice(JOB_CHILD.length));
    const [runs, jobs] = await Promise.all([
      runIds.length > 0 ? this.#d.store.workflowChildOutcomes({ runIds }) : [],
      jobIds.length > 0 ? this.#d.store.workflowJobOutcomes({ jobIds }) : [],
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

  async #wait(
    key: string,
    kind: 'sleep' | 'event',
    waitEvent: string | null,
    delayMs: number | null,
    until: Date | null,
  ): Promise<unknown> {
    const { occurrence, seq, past } = this.#enter(key, kind);
    if (past?.status === 'succeeded') {
      this.#d.counters.stepReplaysAvoided++;
      return past.output;
    }
    const step = { ...this.#lease, name: key, occurrence };
    if (past?.status === 'waiting') {
      // Armed by an earlier execution: its wake-up time stands; see whether the wait is over.
      const fin = await this.#d.store.workflowFinishWait({ ...step, waitEvent, stepKey: displayKey(key, occurrence) });
      if (!fin.ok) return this.#refused();
      if (fin.done) return fin.output;
      return this.#suspend(step, kind, waitEvent);
    }
    const armed = await this.#d.store.workflowArmWait({ ...step, seq, kind, waitEvent, delayMs, until });
    if (!armed.ok) return this.#refused();
    if (armed.kind !== kind) {
      throw new NonDeterminismError(
        `workflow "${this.name}" run ${this.runId} is not deterministic: "${displayKey(key, occurrence)}" is a ${armed.kind} in its history, not a ${kind}`,
      );
    }
    if (armed.status === 'succeeded') return armed.output;
    if (kind === 'event' || armed.due) {
      const fin = await this.#d.store.workflowFinishWait({ ...step, waitEvent, stepKey: displayKey(key, occurrence) });
      if (!fin.ok) return this.#refused();
      if (fin.done) return fin.output;
    }
    return this.#suspend(step, kind, waitEvent);
  }

  /** Ends the execution at a sleep or event wait: the job is given back, due at the wake-up. */
  async #suspend(step: RunLease & { name: string; occurrence: number }, kind: 'sleep' | 'event', waitEvent: string | null): Promise<never> {
    const s = await this.#d.store.workflowSuspend({ ...step, state: kind === 'sleep' ? 'sleeping' : 'waiting', waitEvent });
    if (!s.ok) return this.#refused();
    // The event arrived between the look and the suspend: the job is due now, wake a worker.
    if (s.due) this.#d.wake(s.queue);
    this.ended = new Suspended(`workflow run ${this.runId} suspended at ${kind} "${displayKey(step.name, step.occurrence)}"`);
    throw this.ended;
  }
}
