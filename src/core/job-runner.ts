// Runs one claimed job: builds its context, calls the handler, classifies the
// outcome and hands it to the completer. Once the lease is lost, nothing about
// the job is written by this worker.

import type { EventEmitter } from 'node:events';
import type { EngineEvents } from './baton.ts';
import type { Completer, WriteResult } from './completer.ts';
import type { EngineConfig } from './config.ts';
import { LeaseLostError } from './errors.ts';
import type { HandlerMap, JobContext } from './handler.ts';
import type { AttemptError, LeasedJob } from './job.ts';
import { jsonTextHasNul } from './job-spec.ts';
import type { InFlight } from './lease-table.ts';
import type { Logger } from './logger.ts';
import { describeError, isTerminal } from './retry-policy.ts';

export interface RunnerDeps {
  handlers: HandlerMap;
  completer: Completer;
  config: EngineConfig;
  logger: Logger;
  events: EventEmitter<EngineEvents>;
  counters: { succeeded: number; retried: number; deadLettered: number };
  /** Gives the lease up (marks it lost, aborts the signal) because it could not be proven in time. */
  onSelfFenced: (entry: InFlight) => void;
  /** The job is over here (outcome written, fenced, abandoned or the runner failed): drop its lease. */
  onFinished: (entry: InFlight) => void;
}

/** The slot a job runs in: freed once the handler has settled, released once its outcome write resolved. */
export interface Slot {
  handlerDone(): void;
  writeDone(): void;
}

type Outcome =
  | { ok: true; result: unknown }
  | { ok: false; error: unknown; terminal: boolean; kind: AttemptError['kind'] };

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

  constructor(entry: InFlight) {
    this.#entry = entry;
    this.job = entry.job;
    this.payload = entry.job.payload;
    this.token = entry.token;
    this.checkLease = () => {
      if (entry.lost) throw new LeaseLostError(entry.job.id, entry.token);
    };
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
 * Runs the job to its end. Never rejects: a runner failure is reported as an 'error' event.
 * One async frame per job, and no await at all around a handler that returns a plain value.
 */
export async function runJob(entry: InFlight, slot: Slot, d: RunnerDeps): Promise<void> {
  try {
    const { job, token } = entry;
    const startedAt = performance.now();
    if (d.events.listenerCount('started') > 0) {
      const due = Math.max(job.createdAt.getTime(), job.runAt.getTime());
      d.events.emit('started', { job, startLatencyMs: Math.max(0, Date.now() - due) });
    }

    const handler = d.handlers[job.jobType];
    let outcome: Outcome;
    if (!handler) {
      // Retried, not dead-lettered: a deploy may still be rolling out this handler.
      const error = new Error(`no handler registered for job type "${job.jobType}"`);
      outcome = { ok: false, error, terminal: false, kind: 'unknown_job_type' };
    } else {
      try {
        const returned = handler(new LeaseContext(entry));
        outcome = settled(isThenable(returned) ? await returned : returned);
      } catch (error) {
        const terminal = isTerminal(error);
        outcome = { ok: false, error, terminal, kind: terminal ? 'terminal' : 'transient' };
      }
    }
    entry.phase = 'writing';
    slot.handlerDone();
    // Self-fencing: a worker that cannot prove it still holds the lease (paused, partitioned)
    // writes nothing, even if no heartbeat has run since it resumed.
    if (!entry.lost && entry.unproven(d.config.heartbeatDeadlineMs)) d.onSelfFenced(entry);
    if (entry.lost) {
      jobLog(d, entry).debug({}, 'baton: lease lost during execution; outcome discarded');
      return;
    }
    let written: WriteResult;
    if (outcome.ok) {
      written = await d.completer.complete(job.id, token, outcome.result, entry);
    } else {
      const error = { attempt: job.attempt, token, kind: outcome.kind, ...describeError(outcome.error) };
      written = await d.completer.fail(job.id, token, error, outcome.terminal, entry);
    }
    if (!written.accepted) {
      jobLog(d, entry).warn({ reason: written.reason }, 'baton: outcome not recorded (lease no longer ours)');
      return;
    }
    if (written.state === 'succeeded') {
      d.counters.succeeded++;
      if (d.events.listenerCount('succeeded') > 0) d.events.emit('succeeded', { job, durationMs: performance.now() - startedAt });
    } else if (written.state === 'dead_lettered') {
      d.counters.deadLettered++;
      jobLog(d, entry).warn({ err: outcome.ok ? undefined : outcome.error }, 'baton: job dead-lettered');
      d.events.emit('deadLettered', { job, error: outcome.ok ? undefined : outcome.error });
    } else {
      d.counters.retried++;
      d.events.emit('retried', { job, error: outcome.ok ? undefined : outcome.error });
    }
  } catch (err) {
    d.events.emit('error', { where: 'runner', error: err });
  } finally {
    // Still 'running': the runner threw before the handler settled, so its slot is still taken.
    if (entry.phase === 'running') slot.handlerDone();
    // The lease stays in the table (and heartbeated) until its outcome write resolved.
    d.onFinished(entry);
    slot.writeDone();
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as PromiseLike<unknown>).then === 'function';
}

/** A handler's return value as an outcome: stored as jsonb, so it must serialise, without NUL characters. */
function settled(result: unknown): Outcome {
  let text: string | undefined;
  try {
    text = JSON.stringify(result);
  } catch (error) {
    return { ok: false, error: new Error('handler result is not JSON-serialisable', { cause: error }), terminal: true, kind: 'terminal' };
  }
  if (text !== undefined && jsonTextHasNul(text)) {
    return { ok: false, error: new Error('handler result contains NUL (\\u0000) characters'), terminal: true, kind: 'terminal' };
  }
  return { ok: true, result: result === undefined ? null : result };
}
