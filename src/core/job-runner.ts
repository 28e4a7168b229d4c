// Runs one claimed job: builds its context, calls the handler, classifies the
// outcome and hands it to the completer. Once the lease is lost, nothing about
// the job is written by this worker.

import type { EventEmitter } from 'node:events';
import type { EngineEvents } from './baton.ts';
import type { Completer, WriteResult } from './completer.ts';
import type { EngineConfig } from './config.ts';
import { LeaseLostError } from './errors.ts';
import type { HandlerMap, JobContext } from './handler.ts';
import type { AttemptError, Job } from './job.ts';
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
  /** Called once the handler has settled, before the outcome is written. */
  onHandlerDone: () => void;
  /** Gives the lease up (marks it lost, aborts the signal) because it could not be proven in time. */
  onSelfFenced: (entry: InFlight) => void;
}

type Outcome =
  | { ok: true; result: unknown }
  | { ok: false; error: unknown; terminal: boolean; kind: AttemptError['kind'] };

export async function runJob(entry: InFlight, d: RunnerDeps): Promise<void> {
  const { job, token } = entry;
  // Made only when there is something to log: a child logger per job is measurable at volume.
  const log = () => d.logger.child({ jobId: job.id, token, jobType: job.jobType });
  const ctx: JobContext = {
    payload: job.payload,
    job,
    token,
    get signal() {
      return entry.signal;
    },
    checkLease: () => {
      if (entry.lost) throw new LeaseLostError(job.id, token);
    },
  };
  const startedAt = performance.now();
  if (d.events.listenerCount('started') > 0) {
    const due = Math.max(job.createdAt.getTime(), job.runAt.getTime());
    d.events.emit('started', { job, startLatencyMs: Math.max(0, Date.now() - due) });
  }

  const outcome = await execute(ctx, d.handlers[job.jobType]);
  d.onHandlerDone();
  // Self-fencing: a worker that cannot prove it still holds the lease (paused, partitioned)
  // writes nothing, even if no heartbeat has run since it resumed.
  if (!entry.lost && entry.unproven(d.config.heartbeatDeadlineMs)) d.onSelfFenced(entry);
  if (entry.lost) {
    log().debug({}, 'baton: lease lost during execution; outcome discarded');
    return;
  }
  entry.phase = 'writing';
  const giveUp = () => entry.lost || entry.unproven(d.config.heartbeatDeadlineMs);
  let written: WriteResult;
  if (outcome.ok) {
    written = await d.completer.complete(job.id, token, outcome.result, giveUp);
  } else {
    const error = { attempt: job.attempt, token, kind: outcome.kind, ...describeError(outcome.error) };
    written = await d.completer.fail(job.id, token, error, outcome.terminal, giveUp);
  }
  if (!written.accepted) {
    log().warn({ reason: written.reason }, 'baton: outcome not recorded (lease no longer ours)');
    return;
  }
  const done: Job = job;
  if (written.state === 'succeeded') {
    d.counters.succeeded++;
    d.events.emit('succeeded', { job: done, durationMs: performance.now() - startedAt });
  } else if (written.state === 'dead_lettered') {
    d.counters.deadLettered++;
    log().warn({ err: outcome.ok ? undefined : outcome.error }, 'baton: job dead-lettered');
    d.events.emit('deadLettered', { job: done, error: outcome.ok ? undefined : outcome.error });
  } else {
    d.counters.retried++;
    d.events.emit('retried', { job: done, error: outcome.ok ? undefined : outcome.error });
  }
}

async function execute(ctx: JobContext, handler: HandlerMap[string] | undefined): Promise<Outcome> {
  if (!handler) {
    // Retried, not dead-lettered: a deploy may still be rolling out this handler.
    const error = new Error(`no handler registered for job type "${ctx.job.jobType}"`);
    return { ok: false, error, terminal: false, kind: 'unknown_job_type' };
  }
  let result: unknown;
  try {
    result = await handler(ctx);
  } catch (error) {
    const terminal = isTerminal(error);
    return { ok: false, error, terminal, kind: terminal ? 'terminal' : 'transient' };
  }
  // The result is stored as jsonb: it must serialise, without NUL characters.
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
