// Retention: the elected leader deletes finished jobs (succeeded, cancelled, dead-lettered)
// once older than their state's retention, walking the jobs in id order in bounded batches, so
// no sweep holds many row locks or runs long; and vacuums the jobs table once it holds many dead
// row versions. Every delete is fenced by the leader lease's epoch, so one sent by a leader that
// was deposed meanwhile (paused, partitioned) deletes nothing.
//
// The walk needs no index of finished jobs (which every completion would write): it reads the
// primary key oldest id first and stops at the first job created after the youngest retention,
// since nothing created later can be due. The walk goes on from where the last one stopped, so
// a sweep reads what became due since; a job it passed that was not due yet (still live, a dead
// letter kept for longer, a job created long ago that finished late, a replayed one) is reached
// when the walk starts over from the oldest: every RETENTION_REVISIT_MS, or every half of the
// youngest retention when that is shorter, once the pass has got through (a pass that has not
// goes on first), so such a job is deleted at most that much later than its age, plus the time
// a pass takes (with an age of 0, at the next sweep).
//
// Each sweep also deletes the job_windows rows of debounce and throttle keys that no enqueue
// needs any more (retention-windows.ts), whatever the jobs' retention: it runs even when every
// finished job is kept.

import type { Executor } from '../driver/executor.ts';
import type { TerminalState } from '../types/job.ts';
import type { EngineConfig } from './config.ts';
import { WindowSweep } from './retention-windows.ts';

/** Batches per sweep: a large backlog is worked off over several sweeps, not in one long one. */
const MAX_BATCHES_PER_SWEEP = 20;

/**
 * How often the walk starts over from the oldest job at most, to delete those it passed before
 * they were due: such a job is deleted at most this much later than its age
 * (or half the youngest age, when that is shorter).
 */
export const RETENTION_REVISIT_MS = 5 * 60_000;

export interface RetentionDeps {
  executor: Executor;
  config: EngineConfig;
  /** The leader lease's epoch while this process leads, else null. */
  leaderEpoch: () => string | null;
  onPurged: (state: TerminalState, byQueue: Array<{ queue: string; n: number }>) => void;
  onError: (err: unknown) => void;
  /** A vacuum of jobs ran, with this many dead versions before it. */
  onVacuumed?: (dead: number) => void;
  /** How often the walk starts over from the oldest (ms). Default: RETENTION_REVISIT_MS or half the youngest age. */
  revisitMs?: number;
}

interface Walk {
  /** The last id examined ('0': start from the oldest). */
  after: string;
  /** When (local monotonic ms) this walk last started from the oldest. */
  startedAt: number;
  /** This pass reached the jobs created after the youngest age (or the end) at least once. */
  reached: boolean;
}

export class Retention {
  /** Its Service name (service.ts): the leader group starts and stops it. */
  readonly name = 'retention';
  readonly #d: RetentionDeps;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  /** The walk, under the epoch it was made in (a new leadership starts it over). */
  #walk: Walk | null = null;
  #walkEpoch: string | null = null;
  /** The last sweep stopped with work left (the walk at its batch limit). */
  #backlog = false;
  readonly #windows: WindowSweep;

  constructor(deps: RetentionDeps) {
    this.#d = deps;
    this.#windows = new WindowSweep(deps.executor, deps.leaderEpoch);
  }

  /** Each state's retention (ms; null keeps). */
  get #ages(): Record<TerminalState, number | null> {
    const r = this.#d.config.retention;
    return { succeeded: r.succeededMs, cancelled: r.cancelledMs, dead_lettered: r.deadLetteredMs };
  }

  get #keepsAll(): boolean {
    return Object.values(this.#ages).every((a) => a === null);
  }

  start(): void {
    // Started even when every finished job is kept: the sweep of job_windows runs all the same.
    if (this.#timer) return;
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
          () => undefined,
          (err) => {
            this.#d.onError(err);
            this.#backlog = false;
          },
        )
        .then(() => {
          this.#running = null;
          if (this.#timer) this.#schedule(this.#backlog ? 0 : this.#d.config.retentionIntervalMs);
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

  /**
   * One sweep over every state with a retention, then over job_windows, then a vacuum if due;
   * returns how many jobs it deleted. Exposed for tests.
   */
  async sweep(): Promise<number> {
    const epoch = this.#d.leaderEpoch();
    if (epoch === null) return 0;
    const deleted = await this.#purge(epoch);
    const windows = await this.#windows.sweep(epoch, this.#d.config.retentionBatchSize, MAX_BATCHES_PER_SWEEP);
    if (windows.backlog) this.#backlog = true;
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
    const { dead, vacuuming } = await this.#d.executor.jobDeadTuples();
    if (dead >= threshold && !vacuuming && this.#d.leaderEpoch() === epoch) {
      await this.#d.executor.jobVacuum();
      this.#d.onVacuumed?.(dead);
    }
  }

  async #purge(epoch: string): Promise<number> {
    const { executor, config } = this.#d;
    this.#backlog = false;
    if (this.#keepsAll) return 0;
    if (this.#walkEpoch !== epoch) {
      this.#walk = null;
      this.#walkEpoch = epoch;
    }
    const ages = this.#ages;
    const youngest = Math.min(...Object.values(ages).filter((a): a is number => a !== null));
    const revisitMs = this.#d.revisitMs ?? Math.min(RETENTION_REVISIT_MS, youngest / 2);
    const now = performance.now();
    let walk = this.#walk;
    // Only a pass that got through starts over: one that had not yet crossed a long stretch of
    // live jobs and kept dead letters would otherwise start over before it reached the due ones.
    if (!walk || (walk.reached && now - walk.startedAt >= revisitMs)) walk = { after: '0', startedAt: now, reached: false };
    this.#walk = walk;
    const deleted: Record<TerminalState, Map<string, number>> = { succeeded: new Map(), cancelled: new Map(), dead_lettered: new Map() };
    let total = 0;
    let done = false;
    for (let i = 0; i < MAX_BATCHES_PER_SWEEP && !done; i++) {
      // Between batches too: a leader that lost its lease stops at once (the fence would anyway).
      if (this.#d.leaderEpoch() !== epoch) break;
      const r = await executor.jobPurgeScan({ after: walk.after, read: config.retentionBatchSize, ages, epoch });
      if (r.last !== null) walk.after = r.last;
      for (const { queue, state, n } of r.deleted) {
        deleted[state].set(queue, (deleted[state].get(queue) ?? 0) + n);
        total += n;
      }
      done = r.done;
    }
    if (done) walk.reached = true;
    if (!done && this.#d.leaderEpoch() === epoch) this.#backlog = true;
    for (const state of Object.keys(deleted) as TerminalState[]) {
      if (deleted[state].size > 0)
        this.#d.onPurged(
          state,
          [...deleted[state]].map(([queue, n]) => ({ queue, n })),
        );
    }
    return total;
  }
}
