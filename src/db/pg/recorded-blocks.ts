// The (queue, block) rows of finished_blocks (migration 0024) that this executor's completions
// inserted in the last TRUST_MS: a batch whose every job falls in them completes without the
// block CTE (completeManyBlocksKnown), whose planning cost a completion of one job 84 µs of
// server time (the completion is unnamed, so planned at every execution). An entry comes only from rows a statement inserted (never from
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
//
// Recorded ahead. A batch of 200 ids in a row touches a block new to the map in four
// completions out of five, so a draining worker would run the block CTE on most of its
// completions. A completion that runs it for a large batch of ids close together (a drain's)
// also inserts the AHEAD_BLOCKS blocks after the batch's last, which its next batches will
// reach, so they complete through the skip: each only if the statement finished some job and
// sees an unfinished job of the queue in that block. That job anchors the row as the job
// being completed anchors the others: retention deletes a block's row only while no job of
// its queue is in the block, and deletes only finished jobs past their age, so the row stays
// at least until that job has finished and aged (the same exception as above for a retention
// age under TRUST_MS). An unanchored row ahead would be deleted by a walk that passed its
// block before a job of the queue committed there (an enqueue transaction held open longer
// than the youngest retention age), and that job, completed through the skip, would be missing
// from listings by queue (test/db/recorded-blocks.test.ts).

import { FINISHED_BLOCK_SHIFT } from './queries/job-fragments.ts';

/** How long an inserted block row is trusted. */
export const RECORDED_BLOCK_TRUST_MS = 5_000;
/** Beyond this many entries the expired ones are dropped (a drain touches a few blocks per second). */
const SWEEP_AT = 4_096;
const BLOCK_DIVISOR = 2 ** FINISHED_BLOCK_SHIFT;
/** Blocks recorded ahead of a drain's batch (see the header). */
export const AHEAD_BLOCKS = 2;
/** The least batch recorded ahead: below it a batch runs the block CTE rarely enough. */
export const AHEAD_MIN_BATCH = 64;

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

/**
 * The blocks to record ahead of a completion that runs the block CTE (see the header): for a
 * batch of at least AHEAD_MIN_BATCH jobs of one queue whose ids span less than twice its size,
 * the AHEAD_BLOCKS blocks after its greatest id's, as a bigint[] literal; else null.
 */
export function blocksAhead(items: readonly BlockItem[]): { queue: string; blocks: string } | null {
  const queue = items[0]?.queue;
  if (items.length < AHEAD_MIN_BATCH || queue === undefined) return null;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const item of items) {
    // Ids past 2^53 are not recorded ahead (their arithmetic would need BigInt for a rare case).
    if (item.queue !== queue || item.id.length >= 16) return null;
    const id = Number(item.id);
    if (id < min) min = id;
    if (id > max) max = id;
  }
  if (max - min >= 2 * items.length) return null;
  const last = Math.floor(max / BLOCK_DIVISOR);
  return { queue, blocks: `{${Array.from({ length: AHEAD_BLOCKS }, (_, i) => last + 1 + i).join(',')}}` };
}

/** The block as SQL computes it (id >> FINISHED_BLOCK_SHIFT), in decimal; ids past 2^53 take the exact path. */
export function blockOf(id: string): string {
  return id.length < 16 ? String(Math.floor(Number(id) / BLOCK_DIVISOR)) : String(BigInt(id) >> BigInt(FINISHED_BLOCK_SHIFT));
}
