// The relay: claims due messages (SKIP LOCKED; next_attempt_at is the visibility timeout),
// publishes them side by side with no transaction or row lock held, then writes the outcomes
// in two statements fenced by the claimed attempt. Woken by NOTIFY, with polling as the
// fallback. Any number of relays may run against one table; each claims only the
// destinations it has publishers for.

import { EventEmitter } from 'node:events';
import type { OutboxStore, OutboxFailItem } from '../../db/outbox-store.ts';
import { describeError } from '../retry-policy.ts';
import type { Logger } from '../logger.ts';
import type { RelayConfig } from './config.ts';
import type { OutboxMessage } from './message.ts';
import { PublishError, type PublisherMap } from './publisher.ts';

/** The longest wait a destination's Retry-After can impose. */
export const RETRY_AFTER_MAX_MS = 24 * 3600 * 1000;

export interface RelayEvents {
  /** Acknowledged by the destination; latency from claim to acknowledgement. */
  published: [{ destination: string; latencyMs: number }];
  retried: [{ destination: string; error: unknown }];
  deadLettered: [{ destination: string; reason: 'rejected' | 'attempts_exhausted'; error: unknown }];
  /** Outcome writes that matched nothing: the claim had lapsed and the message was claimed again. */
  fenced: [{ count: number }];
  /** Finished messages deleted by retention (emitted by the leader, relay or not). */
  purged: [{ state: 'published' | 'dead_lettered'; count: number }];
  error: [{ where: string; error: unknown }];
}

export interface RelayCounters {
  claimed: number;
  published: number;
  retried: number;
  deadLettered: number;
  fenced: number;
}

export interface RelayDeps {
  store: OutboxStore;
  publishers: PublisherMap;
  config: RelayConfig;
  logger: Logger;
  /** Opens the LISTEN connection that calls `onNotify`; null: poll only. */
  listen: ((onNotify: () => void) => { start(): Promise<void>; stop(): Promise<void> }) | null;
}

export class Relay {
  readonly events = new EventEmitter<RelayEvents>();
  readonly counters: RelayCounters = { claimed: 0, published: 0, retried: 0, deadLettered: 0, fenced: 0 };
  readonly #d: RelayDeps;
  readonly #destinations: string[];
  readonly #stop = new AbortController();
  #listener: { start(): Promise<void>; stop(): Promise<void> } | null = null;
  #loop: Promise<void> | null = null;
  #woken = false;
  #wakeSleeper: (() => void) | null = null;

  constructor(deps: RelayDeps) {
    this.#d = deps;
    this.#destinations = Object.keys(deps.publishers).sort();
    this.events.on('error', () => undefined);
  }

  get running(): boolean {
    return this.#loop !== null && !this.#stop.signal.aborted;
  }

  async start(): Promise<void> {
    if (this.#loop || this.#stop.signal.aborted) return;
    if (this.#d.listen) {
      this.#listener = this.#d.listen(() => this.wake());
      await this.#listener.start();
    }
    this.#loop = this.#run();
  }

  /** Claims again at once (a NOTIFY, a local record, a replay). */
  wake(): void {
    this.#woken = true;
    this.#wakeSleeper?.();
  }

  /** Stops claiming; publishes in flight finish (within their deadline) and their outcomes are written. */
  async stop(): Promise<void> {
    this.#stop.abort();
    this.wake();
    await this.#loop;
    await this.#listener?.stop().catch(() => undefined);
    await Promise.allSettled(Object.values(this.#d.publishers).map((p) => p.close()));
  }

  async #run(): Promise<void> {
    const { config } = this.#d;
    let failures = 0;
    while (!this.#stop.signal.aborted) {
      this.#woken = false;
      let n = 0;
      try {
        n = await this.cycle();
        failures = 0;
      } catch (err) {
        failures++;
        this.#error('claim', err);
      }
      if (this.#stop.signal.aborted) break;
      // A full batch: there is likely more. Otherwise sleep until woken or the poll period;
      // after a failure, back off (capped at the poll period) instead of spinning on it.
      if (failures > 0) await this.#sleep(Math.min(config.pollIntervalMs, 50 * 2 ** Math.min(failures, 10)));
      else if (n < config.batchSize) await this.#sleep(config.pollIntervalMs);
    }
  }

  /** Sleeps `ms`, or less when woken (a wake that came during the cycle counts). */
  #sleep(ms: number): Promise<void> {
    if (this.#woken) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wakeSleeper = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wakeSleeper = done;
    });
  }

  /** One claim, its publishes and their outcome writes; answers how many messages it claimed. @internal */
  async cycle(): Promise<number> {
    const { store, config } = this.#d;
    const { claimed, exhausted } = await store.claim({
      destinations: this.#destinations,
      limit: config.batchSize,
      visibilityMs: config.visibilityMs,
    });
    if (exhausted.length > 0) {
      this.counters.deadLettered += exhausted.length;
      this.#d.logger.warn(
        { count: exhausted.length, ids: exhausted.slice(0, 20).map((m) => m.id) },
        'baton: outbox messages dead-lettered: their last claim lapsed with no attempt left',
      );
      // Counted like any other dead letter (the claim that took the last attempt never wrote an outcome).
      for (const m of exhausted)
        this.events.emit('deadLettered', { destination: m.destination, reason: 'attempts_exhausted', error: m.lastError });
    }
    if (claimed.length === 0) return exhausted.length;
    this.counters.claimed += claimed.length;
    const outcomes = await Promise.all(claimed.map((m) => this.#publish(m)));
    const published = claimed.filter((_, i) => outcomes[i]?.ok);
    const failed: Array<OutboxFailItem & { message: OutboxMessage; cause: unknown }> = [];
    claimed.forEach((m, i) => {
      const o = outcomes[i];
      if (!o || o.ok) return;
      const pe = o.error instanceof PublishError ? o.error : null;
      failed.push({
        id: m.id,
        attempt: m.attempt,
        replayCount: m.replayCount,
        error: describeError(o.error),
        reject: pe?.kind === 'reject',
        retryAfterMs: pe?.retryAfterMs === undefined ? null : Math.min(Math.max(pe.retryAfterMs, 0), RETRY_AFTER_MAX_MS),
        message: m,
        cause: o.error,
      });
    });
    const [written, states] = await Promise.all([
      store.publishedMany(published.map((m) => ({ id: m.id, attempt: m.attempt, replayCount: m.replayCount }))),
      store.failMany({ items: failed, backoffBaseMs: config.backoffBaseMs, backoffCapMs: config.backoffCapMs }),
    ]);
    published.forEach((m) => {
      if (!written.has(m.id)) return;
      this.counters.published++;
      const o = outcomes[claimed.indexOf(m)];
      this.events.emit('published', {
        destination: m.destination,
        latencyMs: o?.ok ? o.latencyMs : 0,
      });
    });
    for (const f of failed) {
      const state = states.get(f.id);
      if (state === 'pending') {
        this.counters.retried++;
        this.events.emit('retried', { destination: f.message.destination, error: f.cause });
      } else if (state === 'dead_lettered') {
        this.counters.deadLettered++;
        const reason = f.reject ? 'rejected' : 'attempts_exhausted';
        this.#d.logger.warn({ id: f.id, destination: f.message.destination, reason, err: f.cause }, 'baton: outbox message dead-lettered');
        this.events.emit('deadLettered', { destination: f.message.destination, reason, error: f.cause });
      }
    }
    const fenced = published.filter((m) => !written.has(m.id)).length + failed.filter((f) => !states.has(f.id)).length;
    if (fenced > 0) {
      this.counters.fenced += fenced;
      this.events.emit('fenced', { count: fenced });
    }
    return claimed.length;
  }

  async #publish(m: OutboxMessage): Promise<{ ok: true; latencyMs: number } | { ok: false; error: unknown }> {
    const publisher = this.#d.publishers[m.destination];
    if (!publisher) return { ok: false, error: new Error(`no publisher for destination "${m.destination}"`) };
    const started = performance.now();
    const signal = AbortSignal.timeout(this.#d.config.publishTimeoutMs);
    try {
      await raceAbort(
        publisher.publish(
          {
            id: m.id,
            tenantId: m.tenantId,
            destination: m.destination,
            topic: m.topic,
            payload: m.payload,
            headers: m.headers,
            messageKey: m.messageKey,
            orderingKey: m.orderingKey,
            attempt: m.attempt,
          },
          signal,
        ),
        signal,
      );
      return { ok: true, latencyMs: performance.now() - started };
    } catch (error) {
      return { ok: false, error };
    }
  }

  #error(where: string, error: unknown): void {
    this.#d.logger.warn({ err: error, where }, 'baton: outbox relay operation failed');
    this.events.emit('error', { where, error });
  }
}

/** Rejects when `signal` aborts, even if the publisher ignores it (its promise is left to settle). */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new PublishError('retry', 'publish timed out', { cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
