// The (queue, block) rows of finished_blocks (migration 0024) that this executor's completions
// inserted in the last TRUST_MS: a batch whose every job falls in them completes without the
// block CTE (completeManyBlocksKnown): no probe of the map per block, and less to plan for a
// completion of more than 32 leases, which is planned at every execution (the CTE's planning
// was 84 µs of server time for a completion of one job when every completion was). An entry
// comes only from rows a statement inserted (never from
// rows it found, nor from a statement that skipped the CTE), so it is trusted for TRUST_MS after
// the row was written, measured from before that statement was sent.
//
// Why a skipped record is safe. Retention deletes a block's row only in a statement that sees no
// job of its queue in the block (queries/job-admin.ts, purgeScan). A row this executor inserted
// is invisible to a retention statement already running, and any later one sees the job being
// completed now, which is in the block and of the queue: its queue at the claim, the one the
// skip is decided on, or, if hand-written SQL moved it, the one migration 0026's trigger
// recorded the block for when it moved. The gap that remains: a retention age under TRUST_MS
// lets retention delete the job that caused the insert, and with it the row, while another job
// of the block has not committed its insert yet (inserts committing out of id order). That job,
// completed through the skip, is missing from listings by queue until retention deletes it;
// reads by id, counts and retention still find it. The entries are dropped when a completion
// fails, since a database that lost a commit (a failover) may have lost the row with it.

import { FINISHED_BLOCK_SHIFT } from './queries/job-fragments.ts';

/** How long an inserted block row is trusted. */
export const RECORDED_BLOCK_TRUST_MS = 5_000;
/** Beyond this many entries the expired ones are dropped (a drain touches a few blocks per second). */
const SWEEP_AT = 4_096;
const BLOCK_DIVISOR = 2 ** FINISHED_BLOCK_SHIFT;

export interface BlockItem {
  id: string;
  /** Items without a queue never count as known. */
  queue?: string;
}

export class RecordedBlocks {
  /** `queue \0 block` -> when the statement that inserted it was sent; in insertion order, so in time order. */
  readonly #at = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** The time to pass to `inserted` for a statement about to be sent. */
  now(): number {
    return this.#now();
  }

  /** True when every item's block was inserted for its queue within the trust window. */
  allKnown(items: readonly BlockItem[]): boolean {
    const oldest = this.#now() - RECORDED_BLOCK_TRUST_MS;
    for (const item of items) {
      if (item.queue === undefined) return false;
      const at = this.#at.get(`${item.queue}\0${blockOf(item.id)}`);
      if (at === undefined || at < oldest) return false;
    }
    return true;
  }

  /** After a statement sent at `sentAt` inserted these (queue, block) rows (block as SQL's text). */
  inserted(rows: ReadonlyArray<readonly [queue: string, block: string]>, sentAt: number): void {
    if (this.#at.size + rows.length > SWEEP_AT) this.#sweep();
    for (const [queue, block] of rows) {
      const key = `${queue}\0${block}`;
      // Deleted first, so the map's order stays the order of the times.
      this.#at.delete(key);
      this.#at.set(key, sentAt);
    }
  }

  /** Forgets every entry (after a failed completion: see the header). */
  clear(): void {
    this.#at.clear();
  }

  /** Drops the expired entries from the front; if that frees nothing, starts over (only skips are lost). */
  #sweep(): void {
    const oldest = this.#now() - RECORDED_BLOCK_TRUST_MS;
    for (const [key, at] of this.#at) {
      if (at >= oldest) break;
      this.#at.delete(key);
    }
    if (this.#at.size >= SWEEP_AT) this.#at.clear();
  }
}

/** The block as SQL computes it (id >> FINISHED_BLOCK_SHIFT), in decimal; ids past 2^53 take the exact path. */
export function blockOf(id: string): string {
  return id.length < 16 ? String(Math.floor(Number(id) / BLOCK_DIVISOR)) : String(BigInt(id) >> BigInt(FINISHED_BLOCK_SHIFT));
}
