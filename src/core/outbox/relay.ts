// The relay: a loop of cycles (relay-cycle.ts) that claim due messages (SKIP LOCKED;
// next_attempt_at is the visibility timeout), publish them and write their outcomes. A claimed
// head of an ordering key brings its key's run; the write of a key's publications claims its
// next run, which the next cycle publishes at once while it claims the rest. Woken by NOTIFY,
// with polling as the fallback. Any number of relays may run against one table; each claims
// only the destinations it has publishers for.

import { EventEmitter } from 'node:events';
import type { OutboxStore } from '../../driver/outbox-store.ts';
import type { Logger } from '../logger.ts';
import type { Service } from '../service.ts';
import type { RelayConfig } from './config.ts';
import type { PublisherMap } from './publisher.ts';
import { type Claimed, type CycleResult, claimedCount, RelayCycle } from './relay-cycle.ts';

/** The events of the outbox relay's emitter (`baton.outbox.events`): published, retried, dead-lettered, fenced, purged, error. */
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

/** Messages this process's relay claimed, published, retried, dead-lettered, and outcomes fenced off. */
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

export class Relay implements Service {
  readonly name = 'outbox relay';
  readonly events = new EventEmitter<RelayEvents>();
  readonly counters: RelayCounters = { claimed: 0, published: 0, retried: 0, deadLettered: 0, fenced: 0 };
  readonly #d: RelayDeps;
  readonly #stop = new AbortController();
  readonly #cycle: RelayCycle;
  #listener: { start(): Promise<void>; stop(): Promise<void> } | null = null;
  #loop: Promise<void> | null = null;
  #woken = false;
  #wakeSleeper: (() => void) | null = null;

  constructor(deps: RelayDeps) {
    this.#d = deps;
    this.#cycle = new RelayCycle({
      ...deps,
      destinations: Object.keys(deps.publishers).sort(),
      counters: this.counters,
      events: this.events,
      stopping: this.#stop.signal,
    });
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
    let carried: Claimed | null = null;
    let lastClaim = Number.NEGATIVE_INFINITY;
    // After stop, one more cycle publishes what the last write claimed (heads only: runs stop at
    // stop), so those keys need not wait for their claims to lapse; it claims nothing more.
    while (!this.#stop.signal.aborted || carried) {
      const woken = this.#woken;
      this.#woken = false;
      const stopping = this.#stop.signal.aborted;
      // While carried runs fill a batch (a long backlog on few keys), claim only when woken or
      // once a poll period: the claim reads past every message those keys hold back, and its
      // work would slow the runs' publishes, which are the key's pace.
      const claim =
        !stopping &&
        (!carried || claimedCount(carried) < config.batchSize || woken || performance.now() - lastClaim >= config.pollIntervalMs);
      if (claim) lastClaim = performance.now();
      let r: CycleResult = { handled: 0, freedKey: false, next: null };
      try {
        r = await this.#cycle.run(carried, { claim, claimNext: !stopping });
        failures = 0;
      } catch (err) {
        failures++;
        this.#error('claim', err);
      }
      carried = stopping ? null : r.next;
      if (this.#stop.signal.aborted) continue;
      // Runs carried over, or a full batch: there is likely more. A finished message of an
      // ordering key: its key's next message may be claimable now, and nothing else would wake
      // this or any relay for it. Otherwise sleep until woken or the poll period; after a
      // failure, back off (capped at the poll period) instead of spinning on it.
      if (failures > 0) await this.#sleep(Math.min(config.pollIntervalMs, 50 * 2 ** Math.min(failures, 10)));
      else if (!carried && r.handled < config.batchSize && !r.freedKey) await this.#sleep(config.pollIntervalMs);
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

  #error(where: string, error: unknown): void {
    this.#d.logger.warn({ err: error, where }, 'baton: outbox relay operation failed');
    this.events.emit('error', { where, error });
  }
}
