// One relay cycle: publishes what a claim handed over (each head, then its key's run one at a
// time, keys side by side) with no transaction or row lock held, then writes the outcomes,
// fenced by the (replay_count, attempt) each message was claimed or read with. The write of a
// key's publications claims the key's next run in the same statement: the next cycle publishes
// it at once. A run stops at its first failure, when the relay stops, and before a publish
// that could outlast the head's claim.
// @internal — not a public API.

import type { EventEmitter } from 'node:events';
import type { OutboxClaimResult, OutboxFailItem, OutboxStore } from '../../driver/outbox-store.ts';
import { describeError } from '../failure.ts';
import type { Logger } from '../logger.ts';
import type { RelayConfig } from './config.ts';
import type { OutboxMessage } from './message.ts';
import { PublishError, type PublisherMap } from './publisher.ts';
import type { RelayCounters, RelayEvents } from './relay.ts';

/** The longest wait a destination's Retry-After can impose. */
export const RETRY_AFTER_MAX_MS = 24 * 3600 * 1000;

/** Claimed messages and the last moment their runs may start a publish (performance.now()). @internal */
export interface Claimed {
  result: OutboxClaimResult;
  runDeadline: number;
}

/** What one cycle did. @internal */
export interface CycleResult {
  /** Messages it claimed (heads and run messages it published or tried) or dead-lettered as exhausted. */
  handled: number;
  /** It finished a message with an ordering key: the next one of that key may be claimable now. */
  freedKey: boolean;
  /** The next runs of the keys it wrote published, claimed by that write: the next cycle's to publish. */
  next: Claimed | null;
}

/** How many messages a claim handed over: its heads and their runs. */
export const claimedCount = (c: Claimed) => c.result.claimed.length + [...c.result.runs.values()].reduce((n, r) => n + r.length, 0);

type PublishOutcome = { ok: true; latencyMs: number } | { ok: false; error: unknown };

/** One publish of a cycle: a claimed head, or a run message published under its head's claim. */
interface Attempted {
  message: OutboxMessage;
  run: boolean;
  outcome: PublishOutcome;
}

/** What publishing one claim did: its publishes, and the messages it dead-lettered as exhausted. */
interface Published {
  attempted: Attempted[];
  exhausted: OutboxMessage[];
}

export interface RelayCycleDeps {
  store: OutboxStore;
  publishers: PublisherMap;
  config: RelayConfig;
  logger: Logger;
  destinations: string[];
  counters: RelayCounters;
  events: EventEmitter<RelayEvents>;
  /** Aborted when the relay stops: runs stop, and no next run is claimed. */
  stopping: AbortSignal;
}

export class RelayCycle {
  readonly #d: RelayCycleDeps;

  constructor(deps: RelayCycleDeps) {
    this.#d = deps;
  }

  /**
   * One cycle: publishes `carried` (runs the last outcome write claimed) at once and, meanwhile,
   * claims and publishes a batch (`claim`); then writes every outcome, claiming the next runs of
   * the keys it wrote published (`claimNext`).
   */
  async run(carried: Claimed | null, opts: { claim: boolean; claimNext: boolean }): Promise<CycleResult> {
    const { store, config } = this.#d;
    const none: Published = { attempted: [], exhausted: [] };
    const fresh = async (): Promise<Published> => {
      if (!opts.claim) return none;
      const runDeadline = this.#runDeadline();
      const result = await store.outboxClaim({
        destinations: this.#d.destinations,
        limit: config.batchSize,
        visibilityMs: config.visibilityMs,
      });
      return this.#publishClaimed({ result, runDeadline });
    };
    // A failed claim must not lose the carried publishes' outcomes: write them, then throw.
    const [fromCarried, fromClaim] = await Promise.allSettled([carried ? this.#publishClaimed(carried) : none, fresh()]);
    const done = [fromCarried, fromClaim].map((r) => (r.status === 'fulfilled' ? r.value : none));
    const attempted = done.flatMap((d) => d.attempted);
    const exhausted = done.flatMap((d) => d.exhausted);
    const r = await this.#writeOutcomes(attempted, opts.claimNext);
    if (fromClaim.status === 'rejected') throw fromClaim.reason;
    if (fromCarried.status === 'rejected') throw fromCarried.reason;
    return {
      handled: attempted.length + exhausted.length,
      freedKey: r.freedKey || exhausted.some((m) => m.orderingKey !== null),
      next: r.next,
    };
  }

  /** A run starts no publish after this; see #publishRun. Taken before the claim is sent. */
  #runDeadline(): number {
    const { visibilityMs, publishTimeoutMs } = this.#d.config;
    return performance.now() + visibilityMs - publishTimeoutMs;
  }

  /** Reports the claim's exhausted messages, then publishes its heads and their runs, keys side by side. */
  async #publishClaimed({ result, runDeadline }: Claimed): Promise<Published> {
    const { claimed, exhausted, runs } = result;
    if (exhausted.length > 0) {
      this.#d.counters.deadLettered += exhausted.length;
      this.#d.logger.warn(
        { count: exhausted.length, ids: exhausted.slice(0, 20).map((m) => m.id) },
        'baton: outbox messages dead-lettered: their last claim lapsed with no attempt left',
      );
      // Counted like any other dead letter (the claim that took the last attempt never wrote an outcome).
      for (const m of exhausted)
        this.#d.events.emit('deadLettered', { destination: m.destination, reason: 'attempts_exhausted', error: m.lastError });
    }
    const attempted = (await Promise.all(claimed.map((head) => this.#publishRun(head, runs.get(head.id) ?? [], runDeadline)))).flat();
    this.#d.counters.claimed += attempted.length;
    return { attempted, exhausted };
  }

  /**
   * Failures first: a run message that failed was never claimed, so once its head is written
   * published it would be claimable at once, before its backoff and its error were recorded.
   * Then the publications, with the claim of the written keys' next runs when `claimNext`; they
   * are written even when the failures' write failed (which is then thrown), or they would be
   * published again once their claims lapse.
   */
  async #writeOutcomes(attempted: Attempted[], claimNext: boolean): Promise<Omit<CycleResult, 'handled'>> {
    const { store, config } = this.#d;
    let freedKey = false;
    const published = attempted.filter((a) => a.outcome.ok);
    const failed: Array<OutboxFailItem & { message: OutboxMessage; cause: unknown }> = [];
    for (const { message: m, run, outcome: o } of attempted) {
      if (o.ok) continue;
      const pe = o.error instanceof PublishError ? o.error : null;
      failed.push({
        id: m.id,
        attempt: m.attempt,
        replayCount: m.replayCount,
        run,
        error: describeError(o.error),
        reject: pe?.kind === 'reject',
        retryAfterMs: pe?.retryAfterMs === undefined ? null : Math.min(Math.max(pe.retryAfterMs, 0), RETRY_AFTER_MAX_MS),
        message: m,
        cause: o.error,
      });
    }
    const failWrite = await store
      .outboxFailMany({ items: failed, backoffBaseMs: config.backoffBaseMs, backoffCapMs: config.backoffCapMs })
      .then(
        (states) => ({ states, error: null }),
        (error: unknown) => ({ states: null, error }),
      );
    const items = published.map(({ message: m, run }) => ({ id: m.id, attempt: m.attempt, replayCount: m.replayCount, run }));
    let written: Set<string>;
    let next: Claimed | null = null;
    // Not when stopping (what it claimed would wait for the last cycle), nor when this cycle
    // throws (it would be lost with the cycle's result, and wait for its claims to lapse).
    const continues = claimNext && !this.#d.stopping.aborted && failWrite.states !== null;
    if (continues && published.some((a) => a.message.orderingKey !== null)) {
      const runDeadline = this.#runDeadline();
      const r = await store.outboxMarkPublishedClaimNext({ items, limit: config.batchSize, visibilityMs: config.visibilityMs });
      written = r.written;
      if (r.next.claimed.length > 0 || r.next.exhausted.length > 0) next = { result: r.next, runDeadline };
    } else {
      written = await store.outboxMarkPublishedMany(items);
    }
    for (const { message: m, outcome: o } of published) {
      if (!written.has(m.id)) continue;
      this.#d.counters.published++;
      if (m.orderingKey !== null) freedKey = true;
      this.#d.events.emit('published', { destination: m.destination, latencyMs: o.ok ? o.latencyMs : 0 });
    }
    if (failWrite.states === null) throw failWrite.error;
    const { states } = failWrite;
    for (const f of failed) {
      const state = states.get(f.id);
      if (state === 'pending') {
        this.#d.counters.retried++;
        this.#d.events.emit('retried', { destination: f.message.destination, error: f.cause });
      } else if (state === 'dead_lettered') {
        this.#d.counters.deadLettered++;
        if (f.message.orderingKey !== null) freedKey = true;
        const reason = f.reject ? 'rejected' : 'attempts_exhausted';
        this.#d.logger.warn({ id: f.id, destination: f.message.destination, reason, err: f.cause }, 'baton: outbox message dead-lettered');
        this.#d.events.emit('deadLettered', { destination: f.message.destination, reason, error: f.cause });
      }
    }
    const fenced = published.filter((a) => !written.has(a.message.id)).length + failed.filter((f) => !states.has(f.id)).length;
    if (fenced > 0) {
      this.#d.counters.fenced += fenced;
      this.#d.events.emit('fenced', { count: fenced });
    }
    return { freedKey, next };
  }

  /**
   * The head, then its run in id order, one at a time: each publish starts after the previous one
   * was acknowledged. Stops at the first failure (the key waits for that message's retry), at
   * the deadline, and when the relay stops; what it did not try stays as it was.
   */
  async #publishRun(head: OutboxMessage, run: OutboxMessage[], deadline: number): Promise<Attempted[]> {
    const done: Attempted[] = [{ message: head, run: false, outcome: await this.#publish(head, head.attempt) }];
    for (const m of run) {
      if (!done.at(-1)?.outcome.ok || this.#d.stopping.aborted || performance.now() >= deadline) break;
      done.push({ message: m, run: true, outcome: await this.#publish(m, m.attempt + 1) });
    }
    return done;
  }

  /** Publishes `m` as its attempt number `attempt`, within publishTimeoutMs. */
  async #publish(m: OutboxMessage, attempt: number): Promise<PublishOutcome> {
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
            attempt,
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
