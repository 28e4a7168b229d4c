// The context a workflow function runs with (ctx), for one execution: each call is looked up in
// the run's history by its key (steps started together may finish in any order), a completed step
// answers from history, a new step's output is committed under the lease before its caller goes
// on, a history the code cannot replay is non-determinism (recorded: the run blocks, never a
// silent divergence), and waits (waits.ts) that are not over end the execution once nothing else is in
// flight (parking.ts).

import type { HistoryStep, RunLease } from '../../driver/workflow-store.ts';
import { LeaseLostError, NonDeterminismError, TerminalError } from '../../types/errors.ts';
import type {
  BlockedReason,
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
import { CHILDREN_MAX } from './children.ts';
import { refusalOf } from './deadline.ts';
import { type EventWait, eventWait } from './event-wait.ts';
import type { ExecutionDeps } from './execution.ts';
import { displayKey, History, PATCH_PREFIX } from './history.ts';
import { StepFailedError, Stop, Suspended, serialise, stopResult } from './outcome.ts';
import { type ParkedWait, Parking, suspendWaits } from './parking.ts';
import { joinChildren, NotOver, sleepOrEvent, type WaitIo } from './waits.ts';

const KEY_MAX_CHARS = 256;

/**
 * How long a new step that went past an unreached position waits, with nothing else in flight
 * and no call entering or leaving, for a sibling branch to reach that position's step (one that
 * awaits a timer or outside I/O first) before the run is found non-deterministic (docs/workflows.md#versioning).
 */
export const SIBLING_QUIET_MS = 250;

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
  /** Why the run's history cannot be replayed by this code, once a call found out. */
  divergence: BlockedReason | null = null;
  readonly #history: History;
  readonly #occurrences = new Map<string, number>();
  /** Names of steps and waits in flight: two with one name at once could not be told apart. */
  readonly #inFlight = new Set<string>();
  /** The job's signal, also aborted when the run is cancelled from this process. */
  readonly #signal: AbortSignal;
  /** The driving job's progress report, which each step is given. */
  readonly #progress: JobContext['progress'];
  /** Executions that crashed in a row before this one: steps called before its first commit add them to their attempt. */
  readonly #crashes: number;
  /** This execution committed a step or found a wait over: the run's crash count went back to 0 (docs: step.attempt). */
  #committed = false;
  readonly parking: Parking;
  /** What the wait calls (waits.ts) use of this execution. */
  readonly #io: WaitIo;
  #calls = 0;

  constructor(
    run: { id: string; name: string; tenantId: string; input: unknown; steps: HistoryStep[]; crashes?: number },
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
    this.#history = new History(run.steps);
    this.#crashes = run.crashes ?? 0;
    this.parking = new Parking((waits) => this.#suspend(waits));
    this.#io = {
      store: d.store,
      lease,
      counters: d.counters,
      refused: () => this.#refused(),
      diverged: (what, steps) => this.#diverged(what, steps),
      checkNew: (name, occurrence, seq) => this.#checkNew(name, occurrence, seq),
      committed: () => {
        this.#committed = true;
      },
    };
  }

  get signal(): AbortSignal {
    return this.#signal;
  }

  ensureOpen(): void {
    if (this.ended) throw this.ended;
  }

  /** A function that returns before reaching every step its history holds has changed. */
  ensureHistoryUsed(): void {
    const next = this.#history.firstUnreached();
    if (next) {
      const shown = displayKey(next.name, next.occurrence);
      this.#diverged(`it returned where its history has step "${shown}" (position ${next.seq + 1})`, [shown]);
    }
  }

  /** Records the non-determinism (the run blocks on it) and throws it. */
  #diverged(what: string, steps: string[]): never {
    const message = `workflow "${this.name}" run ${this.runId} is not deterministic: ${what}`;
    this.divergence ??= { code: 'NON_DETERMINISM', message, steps };
    throw new NonDeterminismError(message);
  }

  /** Claims the next position for `key` and its entry in the history, if any; the caller must `#leave(key)`. */
  #enter(key: string, kind: StepKind): { occurrence: number; seq: number; past: HistoryStep | undefined } {
    this.ensureOpen();
    if (typeof key !== 'string' || key.length === 0 || key.length > KEY_MAX_CHARS || key.includes('\u0000')) {
      throw new TerminalError(`a step key must be a string of 1-${KEY_MAX_CHARS} characters without NUL`);
    }
    if (key.startsWith(PATCH_PREFIX)) throw new TerminalError(`a step key may not start with "${PATCH_PREFIX}"`);
    if (this.#inFlight.has(key)) {
      throw new TerminalError(
        `step "${key}" was called while a step of the same name was still running: steps that run together need distinct names`,
      );
    }
    const occurrence = (this.#occurrences.get(key) ?? 0) + 1;
    this.#occurrences.set(key, occurrence);
    const seq = this.#calls++;
    const past = this.#history.take(key, occurrence);
    if (past && past.kind !== kind) {
      const shown = displayKey(key, occurrence);
      this.#diverged(`the code reached ${kind} "${shown}" where its history has a ${past.kind} of that key`, [shown]);
    }
    this.#inFlight.add(key);
    this.parking.begin();
    return { occurrence, seq, past };
  }

  #leave(key: string): void {
    this.#inFlight.delete(key);
    this.parking.end();
  }

  /**
   * Before a step the history does not hold runs (at position `seq`): when the code went past a
   * position whose entry it never reached, that entry was renamed or removed (non-determinism),
   * not followed by a new step. The calls that memoized siblings lead to come within a turn, so it
   * looks after one. A sibling branch may also reach its stored steps later, after a timer or
   * outside I/O the engine does not see: the step then waits, and is found non-deterministic only
   * once the entry is still unreached after SIBLING_QUIET_MS with no other call in flight and none
   * entering or leaving (a sequential function waits on this step alone, so it blocks then).
   */
  async #checkNew(key: string, occurrence: number, seq: number): Promise<void> {
    if (!this.#history.pending) return;
    await new Promise((resolve) => setImmediate(resolve));
    const unreached = () => this.#history.skipped(seq + 1);
    if (!unreached()) return;
    await this.parking.hold(
      () => !unreached(),
      SIBLING_QUIET_MS,
      () => this.#signal.aborted || this.ended !== null,
    );
    this.ensureOpen();
    const skipped = unreached();
    if (!skipped) return;
    const shown = displayKey(key, occurrence);
    const theirs = displayKey(skipped.name, skipped.occurrence);
    this.#diverged(
      `the code reached "${shown}", which its history does not hold, and went past ${skipped.kind} "${theirs}" ` +
        `(position ${skipped.seq + 1}) without reaching it`,
      [shown, theirs],
    );
  }

  async #refused(): Promise<never> {
    const r = await refusalOf(this.#d, this.#lease);
    if (r.kind === 'lease_lost') throw new LeaseLostError(this.#lease.jobId, this.#lease.token);
    this.ended = new Stop(stopResult(r));
    throw this.ended;
  }

  async step<T>(key: string, fn: (step: StepContext) => T | Promise<T>): Promise<T> {
    const { occurrence, seq, past } = this.#enter(key, 'step');
    // Taken at the call: a sibling's commit landing before fn starts does not take it away.
    const crashed = this.#committed ? 0 : this.#crashes;
    try {
      if (past?.status === 'succeeded') {
        this.#d.counters.stepReplaysAvoided++;
        return past.output as T;
      }
      await this.#checkNew(key, occurrence, seq);
      return (await this.#runStep(key, occurrence, seq, crashed, fn)) as T;
    } finally {
      this.#leave(key);
    }
  }

  async #runStep(key: string, occurrence: number, seq: number, crashed: number, fn: (step: StepContext) => unknown): Promise<unknown> {
    const shown = displayKey(key, occurrence);
    const startedAt = new Date();
    const attempt = this.#history.failures(shown) + 1 + crashed;
    const step: StepContext = { idempotencyKey: `${this.runId}:${shown}`, attempt, signal: this.#signal, progress: this.#progress };
    // A span for the step's function only when one would record (tracing.ts): none costs one call.
    const span = this.#d.tracing?.startStep({ workflow: this.name, runId: this.runId, step: shown, attempt }) ?? null;
    let value: unknown;
    try {
      value = await (span ? span.run(() => fn(step)) : fn(step));
      span?.end('ok');
    } catch (err) {
      span?.end('error', err);
      const error = { name: err instanceof Error ? err.name : 'Error', message: err instanceof Error ? err.message : String(err) };
      // Recorded for the run's history only; the job's failure write is what counts.
      await this.#d.store.workflowFailStep({ ...this.#lease, name: key, occurrence, seq, error, startedAt }).catch(() => undefined);
      throw new StepFailedError(shown, err);
    }
    this.ensureOpen();
    const output = serialise(value, `the output of step "${shown}"`);
    const res = await this.#d.batch.commitStep({ ...this.#lease, name: key, occurrence, seq, output, startedAt });
    if (!res.ok) return this.#refused();
    this.#committed = true;
    this.#d.counters.stepsExecuted++;
    if (!res.won && res.output === undefined) this.#diverged(`"${shown}" is not a step in the run's history`, [shown]);
    return res.output;
  }

  async patched(id: string): Promise<boolean> {
    this.ensureOpen();
    if (typeof id !== 'string' || id.length === 0 || id.length + PATCH_PREFIX.length > KEY_MAX_CHARS || id.includes('\u0000')) {
      throw new TerminalError(`a patch id must be a string of 1-${KEY_MAX_CHARS - PATCH_PREFIX.length} characters without NUL`);
    }
    if (this.#history.hasPatch(id)) return true;
    if (this.#history.passed(this.#calls)) return false;
    this.parking.begin();
    try {
      // The marker takes no position (its seq is the next call's): removing patched() later shifts nothing.
      const res = await this.#d.store.workflowMarkPatch({ ...this.#lease, name: `${PATCH_PREFIX}${id}`, seq: this.#calls });
      if (!res.ok) return await this.#refused();
      this.#history.addPatch(id);
      return true;
    } finally {
      this.parking.end();
    }
  }

  deprecatePatch(id: string): void {
    this.ensureOpen();
    if (typeof id !== 'string' || id.length === 0) throw new TerminalError('a patch id must be a non-empty string');
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
    const name = `${key}:join`;
    const call = { name, ...this.#enter(name, 'children') };
    let r: unknown;
    try {
      r = await joinChildren(this.#io, call, ids);
    } finally {
      this.#leave(name);
    }
    return (r instanceof NotOver ? this.parking.park(r.wait) : r) as Array<ChildResult<T>>;
  }

  async #wait(key: string, kind: 'sleep' | 'event', wait: EventWait | null, delayMs: number | null, until: Date | null): Promise<unknown> {
    const call = { name: key, ...this.#enter(key, kind) };
    let r: unknown;
    try {
      r = await sleepOrEvent(this.#io, call, kind, wait, delayMs, until);
    } finally {
      this.#leave(key);
    }
    return r instanceof NotOver ? this.parking.park(r.wait) : r;
  }

  /**
   * Ends the execution at the waits parked (parking.ts): the job is given back, due at the
   * earliest wake-up, or now when an event one waits for is here. Answers what ends it.
   */
  async #suspend(waits: ParkedWait[]): Promise<unknown> {
    if (!(await suspendWaits(this.#d, this.#lease, waits))) return this.#refused().catch((err: unknown) => err);
    const at = waits.map((w) => `${w.kind} "${displayKey(w.name, w.occurrence)}"`).join(', ');
    this.ended = new Suspended(`workflow run ${this.runId} suspended at ${at}`);
    return this.ended;
  }
}
