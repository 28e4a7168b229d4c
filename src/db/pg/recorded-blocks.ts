// The (queue, block) pairs of finished_blocks (migration 0024) that this process's completions
// recorded in the last TRUST_MS: a batch that falls wholly in them completes without the block
// CTE (completeManyBlocksKnown), whose planning cost a batch of one as much as its execution.
// An entry is set only by a statement that recorded the block, never by one that skipped it, so
// it is trusted TRUST_MS after the last real record at most.
//
// Why a skipped record is safe: retention deletes a block's row only in a statement that sees no
// job of its queue in the block (queries/job-admin.ts, purgeScan), and the job being completed is one,
// visible since its insert committed. The one gap: within TRUST_MS of the record, retention
// (at a retention age under TRUST_MS) deletes the block's other jobs while this job's insert has
// not committed yet, though a later id has (inserts committing out of id order). Such a job is
// missing from listings by queue until retention deletes it; reads by id, counts and retention
// still find it.

import { FINISHED_BLOCK_SHIFT } from './queries/job-fragments.ts';

/** How long a recorded block is trusted; short, so that the gap above needs a retention age under it. */
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
  /** `queue \0 block` -> when a statement recorded it (performance.now()). */
  readonly #at = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** True when every item's block was recorded for its queue within the trust window. */
  allKnown(items: readonly BlockItem[]): boolean {
    const oldest = this.#now() - RECORDED_BLOCK_TRUST_MS;
    for (const item of items) {
      if (item.queue === undefined) return false;
      const at = this.#at.get(blockKey(item.queue, item.id));
      if (at === undefined || at < oldest) return false;
    }
    return true;
  }

  /** After a statement that recorded the blocks of the items in `accepted` (the jobs it finished). */
  recorded(items: readonly BlockItem[], accepted: ReadonlySet<string>): void {
    const now = this.#now();
    if (this.#at.size >= SWEEP_AT) {
      for (const [key, at] of this.#at) if (at < now - RECORDED_BLOCK_TRUST_MS) this.#at.delete(key);
      // Still full (thousands of blocks recorded within the window): start over, nothing is lost
      // but a skipped CTE.
      if (this.#at.size >= SWEEP_AT) this.#at.clear();
    }
    for (const item of items) {
      if (item.queue !== undefined && accepted.has(item.id)) this.#at.set(blockKey(item.queue, item.id), now);
    }
  }
}

/** The block as SQL computes it (id >> FINISHED_BLOCK_SHIFT); ids past 2^53 take the exact path. */
function block(id: string): string {
  return id.length < 16 ? String(Math.floor(Number(id) / BLOCK_DIVISOR)) : String(BigInt(id) >> BigInt(FINISHED_BLOCK_SHIFT));
}

const blockKey = (queue: string, id: string) => `${queue}\0${block(id)}`;
