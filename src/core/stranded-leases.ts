// Leases this worker holds without knowing it: a claim (or a release) that committed but
// whose reply never arrived (reset, timeout, a destroyed connection). After such a failure,
// and on each heartbeat for a lease length after it, the worker reads the leases the table
// says it owns and gives back, with the attempt refunded, those it never started. Without
// this they would wait out their lease and, with a spent budget, dead-letter unrun.
//
// A lease is stranded only once every claim that was in flight when the owned leases were
// read has settled (its jobs are then in the lease table, or released) and it is still not
// in the table under that token. The release is fenced by token like every lease write.

import type { Executor, Lease } from '../db/executor.ts';
import { monotonicMs, type LeaseTable } from './lease-table.ts';

export interface StrandedLeasesDeps {
  executor: Executor;
  owner: string;
  leases: LeaseTable;
  /** How long after a failure to keep looking: a claim's leases are the reaper's once they expire. */
  windowMs: number;
  /** The claims in flight right now; each settles once its jobs are in the lease table or released. */
  claimsInFlight: () => Iterable<Promise<unknown>>;
  /**
   * Tokens at or below this were handed out before this worker's first claim. With a configured
   * worker id an earlier process may have used the same id: its leases are not ours to refund
   * (it may have crashed running them), so they are left to the reaper.
   */
  tokenFloor: () => bigint;
  onReleased: (jobs: ReadonlyArray<Lease & { queue: string }>) => void;
  onError: (err: unknown) => void;
}

export class StrandedLeases {
  readonly #d: StrandedLeasesDeps;
  #until = Number.NEGATIVE_INFINITY;
  #running: Promise<void> | null = null;
  #again = false;

  constructor(deps: StrandedLeasesDeps) {
    this.#d = deps;
  }

  /** A claim or release failed without a definite answer: look now, and on every tick for a while. */
  suspect(): void {
    this.#until = monotonicMs() + this.#d.windowMs;
    this.#sweep();
  }

  /** Called on each heartbeat tick; looks again while a recent failure is unexplained. */
  tick(): void {
    if (monotonicMs() < this.#until) this.#sweep();
  }

  /** Resolves when no sweep is running (stop). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  #sweep(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#once()
      .catch((err: unknown) => this.#d.onError(err))
      .finally(() => {
        this.#running = null;
        if (this.#again) {
          this.#again = false;
          this.#sweep();
        }
      });
  }

  async #once(): Promise<void> {
    const { executor, leases } = this.#d;
    const owned = await executor.jobLeasesOwned({ owner: this.#d.owner });
    if (owned.length === 0) return;
    // Claims in flight now may have committed the leases just read: wait until their jobs are known.
    await Promise.allSettled([...this.#d.claimsInFlight()]);
    const floor = this.#d.tokenFloor();
    const stranded = owned.filter((l) => leases.get(l.id)?.token !== l.token && BigInt(l.token) > floor);
    if (stranded.length === 0) return;
    const released = await executor.jobReleaseMany({ leases: stranded, refundAttempt: true });
    const jobs = stranded.filter((l) => released.has(l.id));
    if (jobs.length > 0) this.#d.onReleased(jobs);
  }
}
