// The producer side: validate specs, insert them (one statement per batch, in the
// caller's transaction when given one), and wake the queues' workers: here at once,
// elsewhere by a debounced NOTIFY that never runs inside the insert's transaction
// unless it must (the caller's own transaction, whose commit Baton cannot see). Each
// result says if no live worker can run its job yet (read from the workers table, a few
// seconds stale at most; the job is stored all the same).

import type { Executor, NewJob } from '../driver/executor.ts';
import { BatonError } from '../types/errors.ts';
import type { EnqueueResult, EnqueueWarning, InsertedJob, JobSpec } from '../types/job.ts';
import type { EnqueueOptions } from './baton.ts';
import type { EngineConfig } from './config.ts';
import type { EngineEventEmitter } from './events.ts';
import { normalizeSpec, tenantConcurrencyKey } from './job-spec.ts';
import { channelFor, Notifier } from './notifier.ts';
import { type TraceCarrier, type Tracing, traceCarrier } from './tracing.ts';

/** Most specs one enqueueMany takes (one INSERT statement). */
export const ENQUEUE_BATCH_MAX = 10_000;
/** How long a read of what live workers can run is used before it is read again (in the background). */
export const CAPABILITIES_TTL_MS = 2_000;

/** Queue -> job types some live worker of that queue has handlers for. */
type Capabilities = Map<string, Set<string>>;

export interface ProducerDeps {
  config: EngineConfig;
  executor: Executor;
  events: EngineEventEmitter;
  /** Wakes this process's dispatchers of these queues. */
  wakeLocal: (queues: string[]) => void;
  onNotifyError: (err: unknown) => void;
  tracing: Tracing;
}

export class Producer {
  readonly #d: ProducerDeps;
  readonly #notifier: Notifier;
  #capabilities: { readAt: number; value: Capabilities } | null = null;
  #reading: Promise<Capabilities | null> | null = null;

  constructor(deps: ProducerDeps) {
    this.#d = deps;
    this.#notifier = new Notifier({
      debounceMs: deps.config.notifyDebounceMs,
      channelOf: (q) => channelFor(deps.config.schema, q),
      send: (channels) => deps.executor.jobNotify({ channels }),
      onError: deps.onNotifyError,
    });
  }

  /** No NOTIFY is sent after this (the trailing ones owed are dropped: polling covers them). */
  stop(): void {
    this.#notifier.stop();
  }

  async enqueueMany(specs: JobSpec[], opts: EnqueueOptions = {}): Promise<EnqueueResult[]> {
    const { config, executor } = this.#d;
    if (!Array.isArray(specs) || specs.length > ENQUEUE_BATCH_MAX) {
      throw new BatonError('INVALID_ARGUMENT', `jobs must be an array of at most ${ENQUEUE_BATCH_MAX} specs`);
    }
    if (specs.length === 0) return [];
    const trace = opts.traceContext === undefined ? this.#d.tracing.capture() : givenTrace(opts.traceContext);
    const jobs = specs.map((s, i) => normalizeSpec(s, config.maxAttemptsDefault, specs.length > 1 ? i : undefined, trace));
    if (opts.keySpace === 'tenant') {
      for (const j of jobs) if (j.concurrencyKey) j.concurrencyKey = tenantConcurrencyKey(j.tenantId, j.concurrencyKey);
    } else if (opts.keySpace !== undefined && opts.keySpace !== 'shared') {
      throw new BatonError('INVALID_ARGUMENT', "keySpace must be 'shared' or 'tenant'", { details: { field: 'keySpace' } });
    }
    const notify = opts.notify !== false;
    if (jobs.some((j) => j.window)) return this.#enqueueWindowed(jobs, opts, notify);
    const queues = [...new Set(jobs.filter((j) => j.runAt === null && j.delayMs === 0).map((j) => j.queue))];
    const channels = (qs: string[]) => qs.map((q) => channelFor(config.schema, q));
    // Autocommit: the leading-edge NOTIFYs run as their own statement in the insert's round
    // trip (after its commit, outside its transaction, before the enqueue is answered).
    const ahead = !opts.client && notify && config.dispatch === 'notify' ? this.#notifier.takeLeading(queues) : [];
    const capabilities = this.#liveCapabilities();
    const inserted = await executor.jobInsertMany({
      jobs,
      ...(opts.client ? { client: opts.client } : {}),
      // In the caller's transaction the NOTIFY rides in the insert statement and is delivered
      // at their COMMIT (Baton cannot see that commit to notify after it).
      ...(opts.client && notify ? { notify: channels(queues) } : {}),
      ...(ahead.length > 0 ? { notifyAfter: { channels: channels(ahead), onError: this.#d.onNotifyError } } : {}),
    });
    const results = await this.#answer(inserted, capabilities);
    // The insert has committed: wake local dispatchers, and owe a trailing NOTIFY for queues
    // whose debounce window was already open.
    if (!opts.client && notify && results.some((r) => r.created)) this.wake(queues, ahead);
    return results;
  }

  /**
   * A batch holding a debounced or throttled spec: plain specs in one insert as usual, then each
   * windowed one under its key's lock (its own transaction, or the caller's), in input order.
   * Its wake-up is sent after the commit: a created job due now wakes its queue; a folded or
   * dropped one has nothing new to run.
   */
  async #enqueueWindowed(jobs: NewJob[], opts: EnqueueOptions, notify: boolean): Promise<EnqueueResult[]> {
    const { executor, config } = this.#d;
    const capabilities = this.#liveCapabilities();
    const client = opts.client ? { client: opts.client } : {};
    const plain = jobs.filter((j) => !j.window);
    const inserted = plain.length > 0 ? await executor.jobInsertMany({ jobs: plain, ...client }) : [];
    const out: InsertedJob[] = [];
    let p = 0;
    for (const job of jobs) {
      const next = job.window ? await executor.jobEnqueueWindowed({ job: { ...job, window: job.window }, ...client }) : inserted[p++];
      if (!next) throw new BatonError('DB_UNAVAILABLE', 'insert returned fewer rows than expected');
      out.push(next);
    }
    const results = await this.#answer(out, capabilities);
    // Due at once by its spec, as the plain path decides: not from the row, whose run_at (the
    // key's clock, read under its lock) is later than created_at (the transaction's start).
    const dueNow = (j: NewJob) => j.runAt === null && j.delayMs === 0 && !(j.window?.kind === 'debounce' && j.window.mode === 'trailing');
    const queues = [...new Set(results.filter((r, i) => r.created && dueNow(jobs[i]!)).map((r) => r.job.queue))];
    if (notify && queues.length > 0) {
      if (opts.client) await executor.jobNotify({ channels: queues.map((q) => channelFor(config.schema, q)), client: opts.client });
      else this.wake(queues);
    }
    return results;
  }

  /** Each insert's answer with its warnings; reports the warnings and the 'enqueued' counts. */
  async #answer(inserted: InsertedJob[], capabilities: Promise<Capabilities | null>): Promise<EnqueueResult[]> {
    const can = await capabilities;
    const results: EnqueueResult[] = inserted.map((r) => ({ ...r, warnings: can ? warningsFor(can, r.job.queue, r.job.jobType) : [] }));
    this.#reportWarnings(results);
    const created = results.filter((r) => r.created);
    for (const q of new Set(created.map((r) => r.job.queue))) {
      this.#d.events.emit('enqueued', { queue: q, count: created.filter((r) => r.job.queue === q).length });
    }
    return results;
  }

  /**
   * What live workers can run, read at most CAPABILITIES_TTL_MS ago; a stale read is used while
   * a fresh one is made in the background, so only a process's first enqueue waits for it.
   * Null when it could not be read: then nothing is warned about.
   */
  #liveCapabilities(): Promise<Capabilities | null> {
    const now = performance.now();
    if (!this.#reading && (!this.#capabilities || now - this.#capabilities.readAt > CAPABILITIES_TTL_MS)) {
      this.#reading = this.#d.executor.workerListLive().then(
        (workers) => {
          const value: Capabilities = new Map();
          for (const w of workers) {
            for (const q of w.queues) {
              const types = value.get(q) ?? new Set<string>();
              for (const t of w.jobTypes) types.add(t);
              value.set(q, types);
            }
          }
          this.#capabilities = { readAt: performance.now(), value };
          this.#reading = null;
          return value;
        },
        () => {
          this.#reading = null;
          return null;
        },
      );
    }
    return this.#capabilities ? Promise.resolve(this.#capabilities.value) : (this.#reading ?? Promise.resolve(null));
  }

  #reportWarnings(results: readonly EnqueueResult[]): void {
    const counts = new Map<string, { code: EnqueueWarning['code']; queue: string; jobType: string; count: number }>();
    for (const r of results) {
      for (const w of r.warnings) {
        const key = `${w.code}\u0000${w.queue}\u0000${w.jobType}`;
        const c = counts.get(key) ?? { code: w.code, queue: w.queue, jobType: w.jobType, count: 0 };
        c.count++;
        counts.set(key, c);
      }
    }
    for (const c of counts.values()) this.#d.events.emit('enqueueWarning', c);
  }

  /** Wakes `queues` here and, in notify mode, elsewhere (except those `notified` already). */
  wake(queues: string[], notified: string[] = []): void {
    if (queues.length === 0) return;
    this.#d.wakeLocal(queues);
    const rest = queues.filter((q) => !notified.includes(q));
    if (this.#d.config.dispatch === 'notify' && rest.length > 0) this.#notifier.notify(rest);
  }
}

/** What may keep a job of `queue` and `jobType` from running, given what live workers can run. */
function warningsFor(can: Capabilities, queue: string, jobType: string): EnqueueWarning[] {
  const types = can.get(queue);
  if (!types) {
    return [
      { code: 'NO_WORKER_FOR_QUEUE', queue, jobType, message: `no live worker works queue "${queue}"; the job waits until one does` },
    ];
  }
  if (!types.has(jobType)) {
    return [
      {
        code: 'NO_HANDLER_FOR_JOB_TYPE',
        queue,
        jobType,
        message: `no live worker of queue "${queue}" has a handler for job type "${jobType}"; its attempts fail (unknown_job_type) until one is deployed`,
      },
    ];
  }
  return [];
}

/** A caller's trace context, checked: a malformed one would be stored and break every attempt's span. */
export function givenTrace(given: TraceCarrier): TraceCarrier {
  const carrier = traceCarrier(given?.traceparent, given?.tracestate);
  if (!carrier)
    throw new BatonError('INVALID_ARGUMENT', 'traceContext.traceparent is not a valid W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)');
  return carrier;
}
