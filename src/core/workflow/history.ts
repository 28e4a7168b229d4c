// A run's history as one execution replays it: steps are memoized by key (name, occurrence), so
// steps started together may finish in any order; a position (seq) the code passed whose entry it
// never reached tells a renamed or removed step (non-determinism) from a new one; patch markers
// (ctx.patched) stand apart and never take a position.

import type { HistoryStep } from '../../driver/workflow-store.ts';

/** The step name a ctx.patched() marker is recorded under; step keys may not start with it. */
export const PATCH_PREFIX = '@patch:';

export function displayKey(name: string, occurrence: number): string {
  return occurrence === 1 ? name : `${name}#${occurrence}`;
}

const keyOf = (name: string, occurrence: number): string => `${occurrence}:${name}`;

export class History {
  /** Succeeded or waiting entries the code has not reached yet in this execution. */
  readonly #unreached = new Map<string, HistoryStep>();
  /** Failed attempts so far, by display key. */
  readonly #failed = new Map<string, number>();
  readonly #patches = new Set<string>();
  /** The highest position any entry (failed included) holds: how far older code went. */
  readonly #lastSeq: number;

  constructor(steps: HistoryStep[]) {
    let last = -1;
    for (const s of steps) {
      if (s.kind === 'patch') {
        this.#patches.add(s.name.slice(PATCH_PREFIX.length));
        continue;
      }
      last = Math.max(last, s.seq);
      if (s.status === 'failed') this.#failed.set(displayKey(s.name, s.occurrence), s.attempts);
      else this.#unreached.set(keyOf(s.name, s.occurrence), s);
    }
    this.#lastSeq = last;
  }

  /** The entry of this key, now reached; undefined for a step the history does not hold (or holds as failed). */
  take(name: string, occurrence: number): HistoryStep | undefined {
    const k = keyOf(name, occurrence);
    const s = this.#unreached.get(k);
    this.#unreached.delete(k);
    return s;
  }

  failures(shown: string): number {
    return this.#failed.get(shown) ?? 0;
  }

  /** Some entry is still unreached (only then can a new step be a renamed one). */
  get pending(): boolean {
    return this.#unreached.size > 0;
  }

  /** The first unreached entry at a position before `calls`: the code went past it without reaching it. */
  skipped(calls: number): HistoryStep | undefined {
    let first: HistoryStep | undefined;
    for (const s of this.#unreached.values()) if (s.seq < calls && (!first || s.seq < first.seq)) first = s;
    return first;
  }

  /** The first entry the code never reached (when it returned). */
  firstUnreached(): HistoryStep | undefined {
    return this.skipped(Number.POSITIVE_INFINITY);
  }

  hasPatch(id: string): boolean {
    return this.#patches.has(id);
  }

  addPatch(id: string): void {
    this.#patches.add(id);
  }

  /** Older code went past position `calls` (an entry there or later) without recording patch markers there. */
  passed(calls: number): boolean {
    return this.#lastSeq >= calls;
  }
}
