// Retention of job_windows (debounce and throttle by key, docs/debounce.md): the leader deletes
// the rows no enqueue needs any more, those whose window has closed and whose job is no longer
// pending and unclaimed, walking them by window end (an index of job_windows; jobs are read by
// id only) in bounded batches from where the last sweep stopped. A row kept because its job still
// waits is passed, and reached again when the walk starts over. Every delete is fenced by the epoch.

import type { Executor, WindowCursor } from '../driver/executor.ts';

export class WindowSweep {
  /** Where the walk goes on from (null: the oldest window end), under the epoch it was made in. */
  #after: WindowCursor | null = null;
  #epoch: string | null = null;

  constructor(
    private readonly executor: Executor,
    private readonly leaderEpoch: () => string | null,
  ) {}

  /**
   * At most `batches` batches of `batchSize` rows; returns how many rows it deleted and whether
   * the next sweep should follow at once.
   */
  async sweep(epoch: string, batchSize: number, batches: number): Promise<{ deleted: number; backlog: boolean }> {
    if (this.#epoch !== epoch) {
      this.#after = null;
      this.#epoch = epoch;
    }
    let deleted = 0;
    for (let i = 0; i < batches; i++) {
      if (this.leaderEpoch() !== epoch) return { deleted, backlog: false };
      const r = await this.executor.jobWindowSweep({ after: this.#after, limit: batchSize, epoch });
      deleted += r.deleted;
      this.#after = r.done ? null : r.last;
      if (r.done) return { deleted, backlog: false };
    }
    // Work left: the next sweep follows at once only when this one deleted rows. One that only
    // passed rows kept for their pending jobs goes on at the next interval, from the cursor.
    return { deleted, backlog: deleted > 0 };
  }
}
