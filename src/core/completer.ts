// Batches outcome writes: completions and failures arriving together go out as
// one statement per kind, each row fenced by its own token. A write that fails
// on the network is retried while the lease may still be ours; a row the
// database did not return was fenced off (a newer lease owns the job).

import type { AttemptErrorInput, Executor, JobCompleteItem, JobFailItem } from '../db/executor.ts';
import type { EngineConfig } from './config.ts';
import { isBatonError } from './errors.ts';
import type { JobState } from './job.ts';

export type WriteResult = { accepted: true; state: JobState } | { accepted: false; reason: 'fenced' | 'abandoned' };

type Pending =
  | { kind: 'complete'; item: JobCompleteItem; resolve: (r: WriteResult) => void; giveUp: () => boolean }
  | { kind: 'fail'; item: JobFailItem; resolve: (r: WriteResult) => void; giveUp: () => boolean };

const RETRY_MIN_MS = 50;
const RETRY_MAX_MS = 2_000;

export interface CompleterDeps {
  executor: Executor;
  config: EngineConfig;
  onFenced: (kind: 'complete' | 'fail', count: number) => void;
  onError: (err: unknown) => void;
}

export class Completer {
  readonly #d: CompleterDeps;
  #buffer: Pending[] = [];
  #scheduled = false;
  #flushing: Promise<void> | null = null;
  #retryDelay = RETRY_MIN_MS;

  constructor(deps: CompleterDeps) {
    this.#d = deps;
  }

  /** `giveUp` is polled before each send (first or retry): true once the lease can no longer be proven. */
  complete(id: string, token: string, result: unknown, giveUp: () => boolean): Promise<WriteResult> {
    return new Promise((resolve) => this.#push({ kind: 'complete', item: { id, token, result }, resolve, giveUp }));
  }

  fail(id: string, token: string, error: AttemptErrorInput, terminal: boolean, giveUp: () => boolean): Promise<WriteResult> {
    return new Promise((resolve) => this.#push({ kind: 'fail', item: { id, token, error, terminal }, resolve, giveUp }));
  }

  #push(p: Pending): void {
    this.#buffer.push(p);
    this.#schedule(0);
  }

  #schedule(delayMs: number): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    const run = () => {
      this.#scheduled = false;
      if (this.#flushing) {
        // One flush at a time; the running one reschedules when it ends.
        return;
      }
      this.#flushing = this.#flush().finally(() => {
        this.#flushing = null;
        if (this.#buffer.length > 0) this.#schedule(0);
      });
    };
    // setImmediate lets completions from the same turn of the event loop join the batch.
    if (delayMs === 0) setImmediate(run);
    else setTimeout(run, delayMs);
  }

  async #flush(): Promise<void> {
    // An outcome that waited here (behind a flush stuck on a starved pool or a dead socket)
    // until its lease can no longer be proven is not sent at all, as on a retry.
    const batch = this.#buffer.splice(0, this.#d.config.completerMaxBatch).filter((p) => {
      if (!p.giveUp()) return true;
      p.resolve({ accepted: false, reason: 'abandoned' });
      return false;
    });
    if (batch.length === 0) return;
    const completes = batch.filter((p) => p.kind === 'complete');
    const fails = batch.filter((p) => p.kind === 'fail');
    const retry: Pending[] = [];
    await Promise.all([
      completes.length > 0 &&
        this.#d.executor
          .jobCompleteMany({ items: completes.map((p) => p.item as JobCompleteItem) })
          .then((ok) => this.#settle(completes, (id) => (ok.has(id) ? 'succeeded' : null), 'complete'))
          .catch((err) => this.#failed(completes, err, retry)),
      fails.length > 0 &&
        this.#d.executor
          .jobFailMany({
            items: fails.map((p) => p.item as JobFailItem),
            backoffBaseMs: this.#d.config.backoffBaseMs,
            backoffCapMs: this.#d.config.backoffCapMs,
          })
          .then((states) => this.#settle(fails, (id) => states.get(id) ?? null, 'fail'))
          .catch((err) => this.#failed(fails, err, retry)),
    ]);
    if (retry.length > 0) {
      this.#buffer.unshift(...retry);
      const delay = this.#retryDelay;
      this.#retryDelay = Math.min(RETRY_MAX_MS, this.#retryDelay * 2);
      // Wait before the next attempt: the database is struggling.
      await new Promise((r) => setTimeout(r, delay));
    } else {
      this.#retryDelay = RETRY_MIN_MS;
    }
  }

  #settle(items: Pending[], stateOf: (id: string) => JobState | null, kind: 'complete' | 'fail'): void {
    let fenced = 0;
    for (const p of items) {
      const state = stateOf(p.item.id);
      if (state) p.resolve({ accepted: true, state });
      else {
        fenced++;
        p.resolve({ accepted: false, reason: 'fenced' });
      }
    }
    if (fenced > 0) this.#d.onFenced(kind, fenced);
  }

  async #failed(items: Pending[], err: unknown, retry: Pending[]): Promise<void> {
    this.#d.onError(err);
    const badInput = isBatonError(err) && err.code === 'INVALID_ARGUMENT';
    if (badInput && items.length > 1) {
      // Bad input in one row fails the whole batch: write each row alone to isolate it.
      await Promise.all(items.map((p) => this.#writeAlone(p, retry)));
      return;
    }
    for (const p of items) {
      if (badInput || p.giveUp()) p.resolve({ accepted: false, reason: 'abandoned' });
      else retry.push(p);
    }
  }

  async #writeAlone(p: Pending, retry: Pending[]): Promise<void> {
    try {
      if (p.kind === 'complete') {
        const ok = await this.#d.executor.jobCompleteMany({ items: [p.item] });
        this.#settle([p], (id) => (ok.has(id) ? 'succeeded' : null), 'complete');
      } else {
        const states = await this.#d.executor.jobFailMany({
          items: [p.item],
          backoffBaseMs: this.#d.config.backoffBaseMs,
          backoffCapMs: this.#d.config.backoffCapMs,
        });
        this.#settle([p], (id) => states.get(id) ?? null, 'fail');
      }
    } catch (err) {
      await this.#failed([p], err, retry);
    }
  }

  /** Resolves once everything buffered has been written or given up. */
  async drain(): Promise<void> {
    while (this.#buffer.length > 0 || this.#flushing || this.#scheduled) {
      await (this.#flushing ?? new Promise((r) => setImmediate(r)));
    }
  }
}
