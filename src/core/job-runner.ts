// Runs one claimed job: builds its context, calls the handler, classifies the
// outcome and hands it to the completer. Once the lease is lost, nothing about
// the job is written by this worker.

import { LeaseLostError, OutcomeWritten } from '../types/errors.ts';
import type { AttemptError, JobProgress, LeasedJob } from '../types/job.ts';
import type { Completer, OutcomeWrite, WriteResult } from './completer.ts';
import type { EngineConfig } from './config.ts';
import type { EngineEventEmitter } from './events.ts';
import { describeError, isTerminal } from './failure.ts';
import type { HandlerMap, JobContext } from './handler.ts';
import { jsonTextHasNul } from './job-spec.ts';
import type { InFlight } from './lease-table.ts';
import type { Logger } from './logger.ts';
import { progressText } from './progress.ts';
import type { JobSpan, JobSpanOutcome, Tracing } from './tracing.ts';

export interface RunnerDeps {
  tracing: Tracing;
  handlers: HandlerMap;
  completer: Completer;
  config: EngineConfig;
  logger: Logger;
  /** Emits never throw: a listener that throws is reported by the emitter. */
  events: EngineEventEmitter;
  counters: { succeeded: number; retried: number; deadLettered: number; cancelled: number };
  /** Gives the lease up (marks it lost, aborts the signal) because it could not be proven in time. */
  onSelfFenced: (entry: InFlight) => void;
  /** The job is over here (outcome written, fenced, abandoned or the runner failed): drop its lease. */
  onFinished: (entry: InFlight) => void;
}

/** The slot a job runs in: freed once the handler has settled, released once its outcome write resolved. */
export interface Slot {
  handlerDone(): void;
  writeDone(): void;
  /** Claims again in `ms` unless something wakes the queue sooner (a retry falls due then). */
  wakeIn(ms: number): void;
}

/**
 * What a handler sees. A class, so a job costs one object and no per-job named closures
 * (checkLease stays an own property: handlers may destructure it).
 */
class LeaseContext implements JobContext {
  readonly payload: unknown;
  readonly job: LeasedJob;
  readonly token: string;
  readonly checkLease: () => void;
  readonly #entry: InFlight;
  /** Made on first use (a getter, so handlers may destructure it): most handlers never report. */
  #progress: ((value: JobProgress) => void) | null = null;

  constructor(entry: InFlight) {
    this.#entry = entry;
    this.job = entry.job;
    this.payload = entry.job.payload;
    this.token = entry.token;
    this.checkLease = () => {
      if (entry.lost) throw new LeaseLostError(entry.job.id, entry.token);
    };
  }

  get progress(): (value: JobProgress) => void {
    const entry = this.#entry;
    // Validated now, so a bad value fails the call that made it; stored by the heartbeater.
    this.#progress ??= (value) => {
      const text = progressText(value);
      if (!entry.lost) entry.progressDue = { text, value };
    };
    return this.#progress;
  }

  get signal(): AbortSignal {
    return this.#entry.signal;
  }
}

/** A child logger per job is measurable at volume: made only when there is something to log. */
function jobLog(d: RunnerDeps, entry: InFlight): Logger {
  return d.logger.child({ jobId: entry.job.id, token: entry.token, jobType: entry.job.jobType });
}

/**
 * Runs the job to its end. Never throws: a runner failure is reported as an 'error' event.
 * A handler that returns a plain value costs no promise and no await: the run is one object,
 * handed to the completer as the outcome to write, and called back once it was written.
 */
export function runJob(entry: InFlight, slot: Slot, d: RunnerDeps): void {
  new JobRun(entry, slot, d).start();
}

class JobRun implements OutcomeWrite {
  readonly id: string;
  readonly token: string;
  readonly lease: InFlight;
  result: unknown = null;
  failure: OutcomeWrite['failure'] = null;
  refund = false;
  /** What the handler threw (or the reason its result was refused), for events and logs. */
  #error: unknown = undefined;
  #startedAt = 0;
  #over = false;
  /** This attempt's span; null when tracing is off (then the handler is called as is, no closure). */
  #span: JobSpan | null = null;
  /** How the attempt ended, for its span: set by written() or #crashed(); unset means the lease was lost. */
  #outcome: JobSpanOutcome | null = null;
  readonly #slot: Slot;
  readonly #d: RunnerDeps;

  constructor(entry: InFlight, slot: Slot, d: RunnerDeps) {
    this.lease = entry;
    this.id = entry.job.id;
    this.token = entry.token;
    this.#slot = slot;
    this.#d = d;
  }

  get queue(): string {
    return this.lease.job.queue;
  }

  start(): void {
    const d = this.#d;
    const { job } = this.lease;
    this.#startedAt = performance.now();
    this.#span = d.tracing.startJob(job);
    // The emitter never throws (a listener's throw is reported by it).
    if (d.events.listenerCount('started') > 0) {
      const due = Math.max(job.createdAt.getTime(), job.runAt.getTime());
      d.events.emit('started', { job, startLatencyMs: Math.max(0, Date.now() - due) });
    }
    // A cancel request that came while the claim's answer was on its way (LeaseTable.requestCancel):
    // the attempt ends as a handler that saw its signal aborted would end it, without running one.
    if (this.lease.cancelRequested) {
      this.#threw(this.lease.signal.reason);
      return;
    }
    const handler = d.handlers[job.jobType];
    if (!handler) {
      // Retried, not dead-lettered: a deploy may still be rolling out this handler.
      this.#threw(new Error(`no handler registered for job type "${job.jobType}"`), 'unknown_job_type');
      return;
    }
    let returned: unknown;
    let thenable: boolean;
    try {
      const span = this.#span;
      returned = span ? span.run(() => handler(new LeaseContext(this.lease))) : handler(new LeaseContext(this.lease));
      thenable = isThenable(returned);
    } catch (error) {
      this.#threw(error);
      return;
    }
    if (thenable) {
      // Promise.resolve adopts a foreign thenable as `await` would (at most one of the two runs).
      Promise.resolve(returned).then(
        (value) => this.#returned(value),
        (error: unknown) => this.#threw(error),
      );
    } else {
      this.#returned(returned);
    }
  }

  /** The handler returned `value`: written as the result unless jsonb cannot hold it. */
  #returned(value: unknown): void {
    const refused = refusedResult(value);
    if (refused) this.#failed(refused, true, 'terminal');
    else this.result = value === undefined ? null : value;
    this.#handlerSettled();
  }

  /** The handler threw (or could not be found): a failed attempt, terminal when the error says so. */
  #threw(error: unknown, kind?: 'unknown_job_type'): void {
    if (error instanceof OutcomeWritten) {
      // The handler gave its job back itself, fenced (a suspended workflow): nothing to write.
      this.#slot.handlerDone();
      this.#outcome = 'released';
      this.#finish();
      return;
    }
    // isTerminal and describeError never throw, whatever was thrown.
    const terminal = kind === undefined && isTerminal(error);
    this.#failed(error, terminal, kind ?? (terminal ? 'terminal' : 'transient'));
    // Our own drain deadline aborted it: not the job's failure, so its attempt is given back.
    this.refund = this.lease.drainAborted;
    this.#handlerSettled();
  }

  #failed(error: unknown, terminal: boolean, kind: AttemptError['kind']): void {
    this.#error = error;
    this.failure = { error: { attempt: this.lease.job.attempt, token: this.token, kind, ...describeError(error) }, terminal };
  }

  #handlerSettled(): void {
    const entry = this.lease;
    const d = this.#d;
    try {
      entry.phase = 'writing';
      this.#slot.handlerDone();
      // Self-fencing: a worker that cannot prove it still holds the lease (paused, partitioned)
      // writes nothing, even if no heartbeat has run since it resumed.
      if (!entry.lost && entry.unproven(d.config.heartbeatDeadlineMs)) d.onSelfFenced(entry);
      if (entry.lost) {
        jobLog(d, entry).debug({}, 'baton: lease lost during execution; outcome discarded');
        this.#finish();
        return;
      }
      // The lease stays in the table (and heartbeated) until written() has been called.
      d.completer.submit(this);
    } catch (err) {
      this.#crashed(err);
    }
  }

  /**
   * The runner itself failed: reported, and nothing is written (the lease runs out or is
   * reaped). Never throws, so neither does anything that ends here: the completer calls
   * written() in a loop over its batch, and the engine starts a claim's jobs in one. Reached
   * only once the handler has settled (from the hand-over to the completer or from written()),
   * so the handler's slot is already free.
   */
  #crashed(err: unknown): void {
    this.#d.events.emit('error', { where: 'runner', error: err });
    this.#outcome = 'error';
    this.#finish();
  }

  /** The completer's answer (called once). */
  written(w: WriteResult): void {
    if (this.#over) return;
    const d = this.#d;
    const { job } = this.lease;
    this.#outcome = !w.accepted
      ? 'fenced'
      : w.state === 'succeeded'
        ? 'succeeded'
        : w.state === 'cancelled'
          ? 'cancelled'
          : this.refund
            ? 'released'
            : w.state === 'dead_lettered'
              ? 'dead_lettered'
              : 'retried';
    try {
      if (!w.accepted) {
        jobLog(d, this.lease).warn({ reason: w.reason }, 'baton: outcome not recorded (lease no longer ours)');
      } else if (w.state === 'succeeded') {
        d.counters.succeeded++;
        if (d.events.listenerCount('succeeded') > 0) d.events.emit('succeeded', { job, durationMs: performance.now() - this.#startedAt });
      } else if (w.state === 'cancelled') {
        // Its job had a cancel request: the failure (or the give-back) ended it, never retried.
        d.counters.cancelled++;
        jobLog(d, this.lease).info({ err: this.#error }, 'baton: job cancelled (cancel requested; the attempt stopped)');
        d.events.emit('cancelled', { job, error: this.#error });
      } else if (this.refund) {
        jobLog(d, this.lease).info({}, 'baton: aborted by the drain deadline; released with its attempt refunded');
        d.events.emit('released', { queue: job.queue, count: 1, reason: 'shutdown' });
      } else if (w.state === 'dead_lettered') {
        d.counters.deadLettered++;
        jobLog(d, this.lease).warn({ err: this.#error }, 'baton: job dead-lettered');
        d.events.emit('deadLettered', { job, error: this.#error });
      } else {
        d.counters.retried++;
        this.#wakeForRetry();
        d.events.emit('retried', { job, error: this.#error });
      }
    } catch (err) {
      this.#crashed(err);
      return;
    }
    this.#finish();
  }

  /**
   * A retry is a delayed job: no NOTIFY announces it. One due before the next poll wakes this
   * queue at the latest time its backoff can end (the failure write drew the delay below this
   * bound from the database's clock before we read its answer), so a short backoff is not
   * stretched to a poll interval.
   */
  #wakeForRetry(): void {
    const { backoffBaseMs, backoffCapMs, pollIntervalMs } = this.#d.config;
    const bound = Math.min(backoffCapMs, backoffBaseMs * 2 ** (this.lease.job.attempt - 1));
    if (bound < pollIntervalMs) this.#slot.wakeIn(bound);
  }

  /** The job is over here: its slot and its lease are given back (once). */
  #finish(): void {
    if (this.#over) return;
    this.#over = true;
    this.#span?.end(this.#outcome ?? 'lease_lost', this.#error);
    this.#d.onFinished(this.lease);
    this.#slot.writeDone();
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}

/** Why a handler's result cannot be stored as jsonb (not serialisable, or NUL characters), else null. */
function refusedResult(value: unknown): Error | null {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    return new Error('handler result is not JSON-serialisable', { cause: error });
  }
  return text !== undefined && jsonTextHasNul(text) ? new Error('handler result contains NUL (\\u0000) characters') : null;
}
