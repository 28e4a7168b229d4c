// The reaper: returns expired leases to pending (or dead-letters them when the
// attempt budget is spent) in bounded batches, and with fast reclaim also the
// leases of workers whose database session is provably gone for longer than the
// grace. Any number of processes may reap at once (SKIP LOCKED, writes conditional on the
// expiry and the owner's session, by the database clock): the elected leader sweeps every
// reaperIntervalMs, the others only every FOLLOWER_SWEEP_EVERY ticks, so reaping never waits
// for an election. Pruning long-gone workers is the leader's alone, fenced by its epoch.

import type { Executor, ReapedJob } from '../driver/executor.ts';
import type { EngineConfig } from './config.ts';
import type { Service } from './service.ts';

export interface ReaperDeps {
  executor: Executor;
  config: EngineConfig;
  lockNamespace: number;
  /** The leader lease's epoch while this process leads (it then sweeps on every tick and prunes), else null. */
  leaderEpoch: () => string | null;
  onReaped: (jobs: ReapedJob[]) => void;
  onError: (err: unknown) => void;
}

const PRUNE_EVERY_TICKS = 240;
/** A process that does not lead sweeps on one tick in this many (5 s at the default interval). */
export const FOLLOWER_SWEEP_EVERY = 20;

export class Reaper implements Service {
  readonly name = 'reaper';
  readonly #d: ReaperDeps;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #ticks = 0;
  #followerTicks = 0;

  constructor(deps: ReaperDeps) {
    this.#d = deps;
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#d.leaderEpoch() === null && ++this.#followerTicks % FOLLOWER_SWEEP_EVERY !== 0) return;
      this.#sweep();
    }, this.#d.config.reaperIntervalMs);
  }

  /**
   * Sweeps now, between ticks (a no-op while one runs or before start): called when this process
   * becomes the leader, most often because the last one died, whose leases are then waiting.
   */
  kick(): void {
    if (this.#timer) this.#sweep();
  }

  #sweep(): void {
    if (this.#running) return;
    this.#running = this.tick()
      .then(() => undefined, this.#d.onError)
      .finally(() => (this.#running = null));
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  /** One sweep; exposed for tests. Returns the jobs it moved. */
  async tick(): Promise<ReapedJob[]> {
    const { executor, config } = this.#d;
    if (config.fastReclaim) await executor.workerSweep({ lockNamespace: this.#d.lockNamespace });
    const all: ReapedJob[] = [];
    for (;;) {
      const batch = await executor.jobReap({
        limit: config.reaperBatchSize,
        graceMs: config.fastReclaimGraceMs,
        fastReclaim: config.fastReclaim,
      });
      all.push(...batch);
      if (batch.length > 0) this.#d.onReaped(batch);
      if (batch.length < config.reaperBatchSize) break;
    }
    if (++this.#ticks % PRUNE_EVERY_TICKS === 0) {
      const epoch = this.#d.leaderEpoch();
      if (epoch !== null) await executor.workerPrune({ epoch });
    }
    return all;
  }
}
