// Batches outcome writes: completions and failures arriving together go out as
// one statement per kind, each row fenced by its own token. A write that fails
// on the network is retried while the lease may still be ours; a row the
// database did not return was fenced off (a newer lease owns the job).

import type { AttemptErrorInput, Executor, JobFailItem } from '../driver/executor.ts';
import { isBatonError } from '../types/errors.ts';
import type { JobState } from '../types/job.ts';
import type { EngineConfig } from './config.ts';

export type WriteResult = { accepted: true; state: JobState } | { accepted: false; reason: 'fenced' | 'abandoned' };

/** The lease an outcome is written under, as the completer polls it before each send. */
export interface OutcomeLease {
  readonly lost: boolean;
  /** True once no round trip has proven the lease for longer than `deadlineMs`. */
  unproven(deadlineMs: number): boolean;
}

/**
 * One outcome to write, handed over as is (no promise, no copy: at volume every per-job object
 * counts). The completer calls `written` exactly once, with what became of it.
 */
export interface OutcomeWrite {
  readonly id: string;
  readonly token: string;
  /** The job's queue (lets the store skip per-queue bookkeeping it did moments ago). */
  readonly queue: string;
  /** The handler's result, written when `failure` is null. */
  readonly result: unknown;
  /** A failed attempt (retried or dead-lettered by failMany); null completes the job. */
  readonly failure: { readonly error: AttemptErrorInput; readonly terminal: boolean } | null;
  /**
   * With a failure: give the job back to pending with its attempt refunded instead of
   * recording the failure (the handler failed because this worker aborted it on shutdown).
   */
  readonly refund: boolean;
  /** Checked before each send (first or retry): once lost or unproven, the outcome is abandoned. */
  readonly lease: OutcomeLease;
  written(result: WriteResult): void;
}

// Shared results: one allocation fewer per job on the hot path.
const SUCCEEDED: WriteResult = Object.freeze({ accepted: true, state: 'succeeded' });
const RELEASED: WriteResult = Object.freeze({ accepted: true, state: 'pending' });
const FENCED: WriteResult = Object.freeze({ accepted: false, reason: 'fenced' });
const ABANDONED: WriteResult = Object.freeze({ accepted: false, reason: 'abandoned' });

const RETRY_MIN_MS = 50;
const RETRY_MAX_MS = 2_000;

export interface CompleterDeps {
  executor: Executor;
  config: EngineConfig;
  onFenced: (kind: 'complete' | 'fail' | 'release', count: number) => void;
  onError: (err: unknown) => void;
}

export class Completer {
  readonly #d: CompleterDeps;
  #buffer: OutcomeWrite[] = [];
  #scheduled = false;
  #flushing: Promise<void> | null = null;
  #retryDelay = RETRY_MIN_MS;

  constructor(deps: CompleterDeps) {
    this.#d = deps;
  }

  /** Queues `w` for the next batch; `w.written` is called once it was written or given up. */
  submit(w: OutcomeWrite): void {
    this.#buffer.push(w);
    this.#schedule(0);
  }

  #giveUp(p: OutcomeWrite): boolean {
    return p.lease.lost || p.lease.unproven(this.#d.config.heartbeatDeadlineMs);
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
      if (!this.#giveUp(p)) return true;
      p.written(ABANDONED);
      return false;
    });
    if (batch.length === 0) return;
    const completes = batch.filter((p) => p.failure === null);
    const rest = completes.length === batch.length ? [] : batch.filter((p) => p.failure !== null);
    const fails = rest.filter((p) => !p.refund);
    const releases = fails.length === rest.length ? [] : rest.filter((p) => p.refund);
    const retry: OutcomeWrite[] = [];
    await Promise.all([
      completes.length > 0 &&
        this.#d.executor
          .jobCompleteMany({ items: completes, deleteRows: this.#d.config.deleteOnSuccess })
          .then((ok) => this.#settle(completes, (id) => (ok.has(id) ? 'succeeded' : null), 'complete'))
          .catch((err) => this.#failed(completes, err, retry)),
      fails.length > 0 &&
        this.#d.executor
          .jobFailMany({
            items: fails.map(failItem),
            backoffBaseMs: this.#d.config.backoffBaseMs,
            backoffCapMs: this.#d.config.backoffCapMs,
          })
          .then((states) => this.#settle(fails, (id) => states.get(id) ?? null, 'fail'))
          .catch((err) => this.#failed(fails, err, retry)),
      releases.length > 0 &&
        this.#d.executor
          .jobReleaseMany({ leases: releases, refundAttempt: true })
          .then((ok) => this.#settle(releases, (id) => (ok.has(id) ? 'pending' : null), 'release'))
          .catch((err) => this.#failed(releases, err, retry)),
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

  #settle(items: OutcomeWrite[], stateOf: (id: string) => JobState | null, kind: 'complete' | 'fail' | 'release'): void {
    let fenced = 0;
    for (const p of items) {
      const state = stateOf(p.id);
      if (state === 'succeeded') p.written(SUCCEEDED);
      else if (kind === 'release' && state) p.written(RELEASED);
      else if (state) p.written({ accepted: true, state });
      else {
        fenced++;
        p.written(FENCED);
      }
    }
    if (fenced > 0) this.#d.onFenced(kind, fenced);
  }

  async #failed(items: OutcomeWrite[], err: unknown, retry: OutcomeWrite[]): Promise<void> {
    this.#d.onError(err);
    const badInput = isBatonError(err) && err.code === 'INVALID_ARGUMENT';
    if (badInput && items.length > 1) {
      // Bad input in one row fails the whole batch: write each row alone to isolate it.
      await Promise.all(items.map((p) => this.#writeAlone(p, retry)));
      return;
    }
    for (const p of items) {
      if (badInput || this.#giveUp(p)) p.written(ABANDONED);
      else retry.push(p);
    }
  }

  async #writeAlone(p: OutcomeWrite, retry: OutcomeWrite[]): Promise<void> {
    try {
      if (p.failure === null) {
        const ok = await this.#d.executor.jobCompleteMany({ items: [p], deleteRows: this.#d.config.deleteOnSuccess });
        this.#settle([p], (id) => (ok.has(id) ? 'succeeded' : null), 'complete');
      } else if (p.refund) {
        const ok = await this.#d.executor.jobReleaseMany({ leases: [p], refundAttempt: true });
        this.#settle([p], (id) => (ok.has(id) ? 'pending' : null), 'release');
      } else {
        const states = await this.#d.executor.jobFailMany({
          items: [failItem(p)],
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

function failItem(p: OutcomeWrite): JobFailItem {
  const { error, terminal } = p.failure as NonNullable<OutcomeWrite['failure']>;
  return { id: p.id, token: p.token, error, terminal };
}
