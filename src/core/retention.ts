// Retention: the elected leader deletes finished jobs (succeeded, cancelled, dead-lettered)
// once older than their state's retention, in bounded batches through the finished-jobs
// index, so no sweep holds many row locks or runs long. Safe anywhere (SKIP LOCKED, and a
// job is deleted only in the state its retention names): the leader is about load.

import type { Executor } from '../db/executor.ts';
import type { EngineConfig } from './config.ts';
import type { TerminalState } from './job.ts';

/** Batches per state per sweep: a large backlog is worked off over several sweeps, not in one long one. */
const MAX_BATCHES_PER_SWEEP = 20;

export interface RetentionDeps {
  executor: Executor;
  config: EngineConfig;
  isLeader: () => boolean;
  onPurged: (state: TerminalState, byQueue: Array<{ queue: string; n: number }>) => void;
  onError: (err: unknown) => void;
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
    if (this.#timer || this.#ages.length === 0) return;
    this.#timer = setInterval(() => {
      if (this.#running || !this.#d.isLeader()) return;
      this.#running = this.sweep()
        .then(() => undefined, this.#d.onError)
        .finally(() => (this.#running = null));
    }, this.#d.config.retentionIntervalMs);
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  /** One sweep over every state with a retention; returns how many jobs it deleted. Exposed for tests. */
  async sweep(): Promise<number> {
    const { executor, config } = this.#d;
    let total = 0;
    for (const [state, olderThanMs] of this.#ages) {
      for (let i = 0; i < MAX_BATCHES_PER_SWEEP; i++) {
        const byQueue = await executor.jobPurge({ state, olderThanMs, limit: config.retentionBatchSize });
        const n = byQueue.reduce((s, q) => s + q.n, 0);
        if (n > 0) this.#d.onPurged(state, byQueue);
        total += n;
        if (n < config.retentionBatchSize) break;
      }
    }
    return total;
  }
}
