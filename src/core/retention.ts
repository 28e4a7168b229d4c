// Retention: the elected leader deletes finished jobs (succeeded, cancelled, dead-lettered)
// once older than their state's retention, in bounded batches through the finished-jobs
// index, so no sweep holds many row locks or runs long; and vacuums the jobs table once it
// holds many dead row versions. Every delete is fenced by the leader lease's epoch, so one
// sent by a leader that was deposed meanwhile (paused, partitioned) deletes nothing.

import type { Executor } from '../db/executor.ts';
import type { EngineConfig } from './config.ts';
import type { TerminalState } from './job.ts';

/** Batches per state per sweep: a large backlog is worked off over several sweeps, not in one long one. */
const MAX_BATCHES_PER_SWEEP = 20;

export interface RetentionDeps {
  executor: Executor;
  config: EngineConfig;
  /** The leader lease's epoch while this process leads, else null. */
  leaderEpoch: () => string | null;
  onPurged: (state: TerminalState, byQueue: Array<{ queue: string; n: number }>) => void;
  onError: (err: unknown) => void;
  /** A vacuum of jobs ran, with this many dead versions before it. */
  onVacuumed?: (dead: number) => void;
}

export class Retention {
  readonly #d: RetentionDeps;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;

  constructor(deps: RetentionDeps) {
    this.#d = deps;
  }

  /** The states with a retention, and their ages (ms). */
  get #ages(): Array<[TerminalState, number]> {
    const r = this.#d.config.retention;
    const all: Array<[TerminalState, number | null]> = [
      ['succeeded', r.succeededMs],
      ['cancelled', r.cancelledMs],
      ['dead_lettered', r.deadLetteredMs],
    ];
    return all.filter((e): e is [TerminalState, number] => e[1] !== null);
  }

  start(): void {
    if (this.#timer || (this.#ages.length === 0 && this.#d.config.vacuumDeadTuples === null)) return;
    // The first sweep at once: a leader that just took over works off what its predecessor left.
    this.#schedule(0);
  }

  /**
   * The next sweep after `ms`. A sweep that stopped at its batch limit left a backlog (jobs
   * finish faster than one sweep per interval deletes them), so the next one starts at once:
   * each sweep stays short, and the table stays bounded by the retention window at any rate.
   */
  #schedule(ms: number): void {
    this.#timer = setTimeout(() => {
      if (this.#d.leaderEpoch() === null) return this.#schedule(this.#d.config.retentionIntervalMs);
      this.#running = this.sweep()
        .then(
          (n) => n,
          (err) => {
            this.#d.onError(err);
            return 0;
          },
        )
        .then((n) => {
          this.#running = null;
          if (this.#timer) this.#schedule(n >= this.#fullSweep ? 0 : this.#d.config.retentionIntervalMs);
        });
    }, ms);
  }

  /** Sweeps soon (a new leader: what its predecessor left), unless a sweep runs or it was never started. */
  kick(): void {
    if (!this.#timer || this.#running) return;
    clearTimeout(this.#timer);
    this.#schedule(0);
  }

  async stop(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  /** Jobs a sweep deletes when every state it sweeps hits the batch limit: a backlog remains. */
  get #fullSweep(): number {
    return MAX_BATCHES_PER_SWEEP * this.#d.config.retentionBatchSize;
  }

  /** One sweep over every state with a retention, then a vacuum if due; returns how many jobs it deleted. Exposed for tests. */
  async sweep(): Promise<number> {
    const epoch = this.#d.leaderEpoch();
    if (epoch === null) return 0;
    const deleted = await this.#purge(epoch);
    await this.#vacuumIfDue(epoch);
    return deleted;
  }

  /**
   * Vacuums jobs once it holds vacuumDeadTuples dead versions and no vacuum runs: every job
   * leaves two (claim, outcome) and retention one more, and until a vacuum removes them every
   * claim walks their entries at the front of the claim index. Autovacuum waits up to a minute
   * between visits to a database, and does nothing where it is off. VACUUM cannot be made
   * conditional in SQL, so the epoch is checked right before it: a leader paused between the
   * check and the statement sends one late VACUUM, which changes no data.
   */
  async #vacuumIfDue(epoch: string): Promise<void> {
    const threshold = this.#d.config.vacuumDeadTuples;
    if (threshold === null) return;
    const { dead, vacuuming } = await this.#d.executor.jobsDeadTuples();
    if (dead >= threshold && !vacuuming && this.#d.leaderEpoch() === epoch) {
      await this.#d.executor.jobsVacuum();
      this.#d.onVacuumed?.(dead);
    }
  }

  async #purge(epoch: string): Promise<number> {
    const { executor, config } = this.#d;
    let total = 0;
    for (const [state, olderThanMs] of this.#ages) {
      for (let i = 0; i < MAX_BATCHES_PER_SWEEP; i++) {
        // Between batches too: a leader that lost its lease stops at once (the fence would anyway).
        if (this.#d.leaderEpoch() !== epoch) return total;
        const byQueue = await executor.jobPurge({ state, olderThanMs, limit: config.retentionBatchSize, epoch });
        const n = byQueue.reduce((s, q) => s + q.n, 0);
        if (n > 0) this.#d.onPurged(state, byQueue);
        total += n;
        if (n < config.retentionBatchSize) break;
      }
    }
    return total;
  }
}
