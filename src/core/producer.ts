// The producer side: validate specs, insert them (one statement per batch, in the
// caller's transaction when given one), and wake the queues' workers: here at once,
// elsewhere by a debounced NOTIFY that never runs inside the insert's transaction
// unless it must (the caller's own transaction, whose commit Baton cannot see).

import type { Executor } from '../db/executor.ts';
import type { EnqueueOptions } from './baton.ts';
import type { EngineConfig } from './config.ts';
import { BatonError } from './errors.ts';
import type { EngineEventEmitter } from './events.ts';
import type { EnqueueResult, JobSpec } from './job.ts';
import { normalizeSpec } from './job-spec.ts';
import { Notifier, channelFor } from './notifier.ts';

/** Most specs one enqueueMany takes (one INSERT statement). */
export const ENQUEUE_BATCH_MAX = 10_000;

export interface ProducerDeps {
  config: EngineConfig;
  executor: Executor;
  events: EngineEventEmitter;
  /** Wakes this process's dispatchers of these queues. */
  wakeLocal: (queues: string[]) => void;
  onNotifyError: (err: unknown) => void;
}

export class Producer {
  readonly #d: ProducerDeps;
  readonly #notifier: Notifier;

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
    const jobs = specs.map((s, i) => normalizeSpec(s, config.maxAttemptsDefault, specs.length > 1 ? i : undefined));
    const notify = opts.notify !== false;
    const queues = [...new Set(jobs.filter((j) => j.runAt === null && j.delayMs === 0).map((j) => j.queue))];
    const channels = (qs: string[]) => qs.map((q) => channelFor(config.schema, q));
    // Autocommit: the leading-edge NOTIFYs run as their own statement in the insert's round
    // trip (after its commit, outside its transaction, before the enqueue is answered).
    const ahead = !opts.client && notify && config.dispatch === 'notify' ? this.#notifier.takeLeading(queues) : [];
    const results = await executor.jobInsertMany({
      jobs,
      ...(opts.client ? { client: opts.client } : {}),
      // In the caller's transaction the NOTIFY rides in the insert statement and is delivered
      // at their COMMIT (Baton cannot see that commit to notify after it).
      ...(opts.client && notify ? { notify: channels(queues) } : {}),
      ...(ahead.length > 0 ? { notifyAfter: { channels: channels(ahead), onError: this.#d.onNotifyError } } : {}),
    });
    const created = results.filter((r) => r.created);
    for (const q of new Set(created.map((r) => r.job.queue))) {
      this.#d.events.emit('enqueued', { queue: q, count: created.filter((r) => r.job.queue === q).length });
    }
    // The insert has committed: wake local dispatchers, and owe a trailing NOTIFY for queues
    // whose debounce window was already open.
    if (!opts.client && notify && created.length > 0) this.wake(queues, ahead);
    return results;
  }

  /** Wakes `queues` here and, in notify mode, elsewhere (except those `notified` already). */
  wake(queues: string[], notified: string[] = []): void {
    if (queues.length === 0) return;
    this.#d.wakeLocal(queues);
    const rest = queues.filter((q) => !notified.includes(q));
    if (this.#d.config.dispatch === 'notify' && rest.length > 0) this.#notifier.notify(rest);
  }
}
