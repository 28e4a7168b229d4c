// The context a workflow function runs with (ctx), for one execution: each call is checked
// against the run's history by position (a mismatch is non-determinism, never a silent
// divergence), a completed step answers from history, a new step's output is committed under
// the lease before the function goes on, and a wait ends the execution by giving the job back.

import type { HistoryStep, RunLease } from '../../driver/workflow-store.ts';
import { LeaseLostError, NonDeterminismError, TerminalError } from '../../types/errors.ts';
import type {
  ChildResult,
  ChildSpec,
  StepContext,
  StepKind,
  WaitForEventOptions,
  WorkflowContext,
  WorkflowEvent,
} from '../../types/workflow.ts';
import type { JobContext } from '../handler.ts';
import { DELAY_MS_MAX, RUN_AT_MAX, RUN_AT_MIN } from '../job-spec.ts';
import { CHILDREN_MAX, CHILDREN_POLL_MS, joinedChildren } from './children.ts';
import { refusalOf } from './deadline.ts';
import type { ExecutionDeps } from './execution.ts';
import { StepFailedError, Stop, Suspended, serialise, stopResult } from './outcome.ts';
import { type EventWait, eventWait } from './waits.ts';

const KEY_MAX_CHARS = 256;

function displayKey(name: string, occurrence: number): string {
  return occurrence === 1 ? name : `${name}#${occurrence}`;
}

export class Execution implements WorkflowContext {
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
  /** The driving job's progress report, which each step is given. */
  readonly #progress: JobContext['progress'];
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
    this.#progress = job.progress;
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
    const r = await refusalOf(this.#d, this.#lease);
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
        progress: this.#progress,
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

  waitForEvent<T = unknown>(key: string, eventName: string | string[], opts?: WaitForEventOptions): Promise<WorkflowEvent<T> | null> {
    let wait: EventWait;
    try {
      wait = eventWait(key, eventName, opts);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#wait(key, 'event', wait, wait.timeoutMs, null) as Promise<WorkflowEvent<T> | null>;
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
      wait: null,
      delayMs: CHILDREN_POLL_MS,
      until: null,
    });
    if (!armed.ok) return this.#refused();
    if (armed.kind !== 'children')
      throw new NonDeterminismError(`workflow "${this.name}" run ${this.runId}: "${key}:join" is not a children wait`);
    if (armed.status === 'succeeded') return armed.output as Array<ChildResult<T>>;
    const joined = await joinedChildren(this.#d.store, ids);
    if (joined) {
      const fin = await this.#d.store.workflowCompleteWait({ ...step, output: JSON.stringify(joined) });
      if (!fin.ok) return this.#refused();
      if (fin.done) return fin.output as Array<ChildResult<T>>;
    }
    const s = await this.#d.store.workflowSuspend({ ...step, state: 'waiting' });
    if (!s.ok) return this.#refused();
    // A child that finished between the look and the suspend saw this run still running and
    // woke nobody: look again now that the run is waiting.
    if (s.due || (await joinedChildren(this.#d.store, ids).catch(() => null))) {
      const queue = s.due ? s.queue : await this.#d.store.workflowWakeRun({ jobId: this.#lease.jobId });
      if (queue) this.#d.wake(queue);
    }
    this.ended = new Suspended(`workflow run ${this.runId} suspended until its children "${key}" finish`);
    throw this.ended;
  }

  async #wait(key: string, kind: 'sleep' | 'event', wait: EventWait | null, delayMs: number | null, until: Date | null): Promise<unknown> {
    const { occurrence, seq, past } = this.#enter(key, kind);
    if (past?.status === 'succeeded') {
      this.#d.counters.stepReplaysAvoided++;
      return past.output;
    }
    const step = { ...this.#lease, name: key, occurrence };
    if (past?.status === 'waiting') {
      // Armed by an earlier execution: its wake-up time stands; see whether the wait is over.
      const fin = await this.#d.store.workflowFinishWait({ ...step, stepKey: displayKey(key, occurrence) });
      if (!fin.ok) return this.#refused();
      if (fin.done) return fin.output;
      return this.#suspend(step, kind);
    }
    const armed = await this.#d.store.workflowArmWait({
      ...step,
      seq,
      kind,
      wait: wait && { names: wait.names, match: wait.match },
      delayMs,
      until,
    });
    if (!armed.ok) return this.#refused();
    if (armed.kind !== kind) {
      throw new NonDeterminismError(
        `workflow "${this.name}" run ${this.runId} is not deterministic: "${displayKey(key, occurrence)}" is a ${armed.kind} in its history, not a ${kind}`,
      );
    }
    if (armed.status === 'succeeded') return armed.output;
    if (kind === 'event' || armed.due) {
      const fin = await this.#d.store.workflowFinishWait({ ...step, stepKey: displayKey(key, occurrence) });
      if (!fin.ok) return this.#refused();
      if (fin.done) return fin.output;
    }
    return this.#suspend(step, kind);
  }

  /** Ends the execution at a sleep or event wait: the job is given back, due at the wake-up. */
  async #suspend(step: RunLease & { name: string; occurrence: number }, kind: 'sleep' | 'event'): Promise<never> {
    const s = await this.#d.store.workflowSuspend({ ...step, state: kind === 'sleep' ? 'sleeping' : 'waiting' });
    if (!s.ok) return this.#refused();
    // The event arrived between the look and the suspend: the job is due now, wake a worker.
    if (s.due) this.#d.wake(s.queue);
    this.ended = new Suspended(`workflow run ${this.runId} suspended at ${kind} "${displayKey(step.name, step.occurrence)}"`);
    throw this.ended;
  }
}
