// The leader lease: one process per database leads (cron ticker, retention, vacuum, worker
// pruning), holding a lease in the database that it renews every renewMs; the others try to take
// it as often. The holder trusts it only for fenceMs (80% of the lease) after sending its last
// successful renewal, by its own monotonic clock, so a holder that cannot renew (paused,
// partitioned, starved) stops acting before the database lets anyone else take over; and every
// leader-only write carries the epoch, so one that arrives late changes nothing.

import type { LeaderStore } from '../driver/leader-store.ts';
import type { Clock } from './clock.ts';
import type { Service } from './service.ts';

/** How many renewals fit in one lease: a missed one or two do not cost the lease. */
export const LEADER_RENEWALS_PER_LEASE = 10;
/** Share of the lease the holder acts on after sending a renewal (like heartbeatDeadlineMs for jobs). */
export const LEADER_FENCE_SHARE = 0.8;

export interface LeaderLeaseDeps {
  store: LeaderStore;
  /** This process's name in the lease row (its worker id). */
  holder: string;
  leaseMs: number;
  clock: Clock;
  lockNamespace: number;
  /** This process's presence lock key, null without one or while its presence session is down. */
  lockKey: () => number | null;
  /** Called when this process starts (true) or stops (false) leading. */
  onChange: (leader: boolean) => void;
  onError: (err: unknown) => void;
}

export class LeaderLease implements Service {
  readonly name = 'leader lease';
  readonly #d: LeaderLeaseDeps;
  readonly renewMs: number;
  readonly fenceMs: number;
  #epoch: string | null = null;
  /** The last epoch this process held (its own lapsed lease is taken again at once). */
  #lastEpoch: string | null = null;
  /** Monotonic ms until which the current epoch may be acted on. */
  #validUntil = Number.NEGATIVE_INFINITY;
  #timer: NodeJS.Timeout | null = null;
  #fenceTimer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #stopped = false;

  constructor(deps: LeaderLeaseDeps) {
    this.#d = deps;
    this.renewMs = Math.max(10, Math.floor(deps.leaseMs / LEADER_RENEWALS_PER_LEASE));
    this.fenceMs = Math.floor(deps.leaseMs * LEADER_FENCE_SHARE);
  }

  /** True while this process holds the lease and its last renewal is recent enough to act on. */
  isLeader(): boolean {
    return this.#epoch !== null && this.#d.clock.now() < this.#validUntil;
  }

  /** The epoch to fence leader-only writes with, while isLeader(); null otherwise. */
  epoch(): string | null {
    return this.isLeader() ? this.#epoch : null;
  }

  /** Tries at once, then every renewMs. */
  start(): void {
    if (this.#timer || this.#stopped) return;
    this.#timer = setInterval(() => this.#tryNow(), this.renewMs);
    this.#tryNow();
  }

  /** Stops renewing and gives the lease up, so another process takes it at its next try. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
    const epoch = this.#epoch;
    this.#lose();
    if (epoch !== null) await this.#d.store.leaderRelease({ holder: this.#d.holder, epoch }).catch(this.#d.onError);
  }

  #tryNow(): void {
    if (this.#running || this.#stopped) return;
    this.#running = this.tick().finally(() => (this.#running = null));
  }

  /** One renewal (while holding) or one try to take the lease; exposed for tests. */
  async tick(): Promise<void> {
    const { store, clock, holder, leaseMs } = this.#d;
    this.#enforceFence();
    const sentAt = clock.now();
    const lockKey = this.#d.lockKey();
    try {
      const held = this.#epoch;
      if (held !== null) {
        const ok = await store.leaderRenew({ holder, epoch: held, leaseMs, lockKey });
        if (this.#epoch !== held) return;
        if (ok) this.#validUntil = Math.max(this.#validUntil, sentAt + this.fenceMs);
        else this.#lose();
      } else {
        const epoch = await store.leaderAcquire({
          holder,
          leaseMs,
          lockKey,
          lockNamespace: this.#d.lockNamespace,
          lastEpoch: this.#lastEpoch,
        });
        if (epoch === null) return;
        if (this.#stopped) {
          await store.leaderRelease({ holder, epoch });
          return;
        }
        this.#epoch = epoch;
        this.#lastEpoch = epoch;
        this.#validUntil = sentAt + this.fenceMs;
        this.#d.onChange(true);
      }
    } catch (err) {
      // A failed round trip is not a lost lease: the local deadline stays the bound.
      this.#d.onError(err);
    } finally {
      this.#enforceFence();
    }
  }

  /** Drops a lease whose deadline passed, and arms a timer for the deadline of the one held. */
  #enforceFence(): void {
    if (this.#fenceTimer) clearTimeout(this.#fenceTimer);
    this.#fenceTimer = null;
    if (this.#epoch === null) return;
    const left = this.#validUntil - this.#d.clock.now();
    if (left <= 0) {
      this.#lose();
      return;
    }
    // Its own timer: a renewal that hangs (blackholed socket, no free pool connection) must not
    // postpone the moment this process stops acting.
    this.#fenceTimer = setTimeout(() => this.#enforceFence(), left + 1);
    this.#fenceTimer.unref?.();
  }

  #lose(): void {
    if (this.#fenceTimer) clearTimeout(this.#fenceTimer);
    this.#fenceTimer = null;
    if (this.#epoch === null) return;
    this.#epoch = null;
    this.#validUntil = Number.NEGATIVE_INFINITY;
    this.#d.onChange(false);
  }
}
