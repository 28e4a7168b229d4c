// Operator actions and read models: inspect, list, replay, cancel, queue depth,
// workers. Replay and cancel are single conditional statements, so a job that
// changed state meanwhile gets a clear conflict instead of a half-written row.
// A cancel of a running job records a request and never rewrites the row's outcome.

import type { Executor } from '../driver/executor.ts';
import type { DatabaseHealth, WorkerInfo } from '../types/admin.ts';
import { BatonError } from '../types/errors.ts';
import { isJobId, JOB_STATES, type Job, type JobState, type JobSummary } from '../types/job.ts';
import { checkSortAndTimes, isWindowedListing, type JobSortKey, pagesByCursor, type SortOrder } from '../types/job-sort.ts';
import { type FlowAdminApi, flowAdmin } from './flow-control-admin.ts';
import {
  type BulkAction,
  type BulkItemResult,
  bulk,
  type PausedQueue,
  pauseQueue,
  type QueuePauseState,
  resumeQueue,
  runNow,
  STATS_WINDOW_SECONDS_DEFAULT,
  STATS_WINDOW_SECONDS_MAX,
  type StatsSnapshot,
  toStatsSnapshot,
} from './queue-admin.ts';

export type { DatabaseHealth, WorkerInfo } from '../types/admin.ts';

/** The filter, sort and page of admin.listJobs (docs/library.md, Admin API). */
export interface ListJobsFilter {
  state?: JobState;
  tenantId?: string;
  queue?: string;
  jobType?: string;
  /** Created at or after this time. */
  createdAfter?: Date;
  /** Created strictly before this time. */
  createdBefore?: Date;
  /**
   * true: jobs whose run-at has come; false: jobs whose run-at lies ahead (a pending job that is
   * scheduled, not yet due). By the database's clock. But for state pending (read whole), applies
   * within the newest JOB_SORT_WINDOW jobs matching the other filters (JobPage.windowed).
   */
  due?: boolean;
  /**
   * Sort key; default id (see JOB_SORT_KEYS). Ties are broken by id in the same order. createdAt
   * is the id order (ids grow with creation). A key other than id or createdAt sorts the newest
   * JOB_SORT_WINDOW matching jobs (JobPage.windowed).
   */
  sort?: JobSortKey;
  /** Default desc. */
  order?: SortOrder;
  /** 1..500, default 50. */
  limit?: number;
  /** >= 0, default 0. Not with `cursor`. */
  offset?: number;
  /**
   * Keyset paging: a page's `nextCursor`, to read the page after it. Each page then costs what
   * the first one does, however deep, and jobs enqueued meanwhile neither shift nor repeat rows.
   * Only for exact listings in id order (pagesByCursor): not a windowed one, nor one newest first
   * whose filters search the finished jobs a window at a time (a job type, a state beside a
   * queue or tenant, succeeded alone); not with `offset`.
   */
  cursor?: string;
}

/** One page of admin.listJobs: job summaries, the capped total, and whether the sort read a bounded window. */
export interface JobPage {
  /** Summaries: bulky fields bounded (see JobSummary). */
  jobs: JobSummary[];
  /**
   * Total rows matching the filter (capped count; see admin docs). A windowed listing filtered
   * by `due` counts within its window (at most JOB_SORT_WINDOW).
   */
  total: number;
  limit: number;
  offset: number;
  /**
   * The cursor of the next page (ListJobsFilter.cursor): the id of the page's last job, when the
   * page is full and the listing pages by cursor (pagesByCursor); null when the page is the last,
   * or the listing pages by offset only.
   */
  nextCursor: string | null;
  /**
   * True when the listing sorted only the newest JOB_SORT_WINDOW matching jobs (by id): a sort
   * other than id or createdAt, or a `due` filter beside any state but pending. Pages past the
   * window are empty.
   */
  windowed: boolean;
}

/** Jobs per state, every state present (zero included). */
export type StateCounts = Record<JobState, number>;

/** How long admin.health() answers from its last read. */
export const HEALTH_CACHE_MS = 5_000;

/** Operator reads and actions, `baton.admin`: jobs, queues, workers, health, flow control (docs/library.md, Admin API). */
export interface AdminApi extends FlowAdminApi {
  /**
   * Throws BatonError JOB_NOT_FOUND. With `tenantId`, a job of another tenant is JOB_NOT_FOUND
   * exactly as an id nobody has, and costs the same: the read itself is limited to the tenant.
   */
  getJob(id: string, opts?: { tenantId?: string | undefined }): Promise<Job>;
  listJobs(filter?: ListJobsFilter): Promise<JobPage>;
  /** Back to pending with a fresh attempt budget; replay_count + 1. JOB_STATE_CONFLICT unless terminal. */
  replay(id: string): Promise<Job>;
  /**
   * A pending or waiting job is cancelled at once (its dependents with it) and answered with
   * state `cancelled`. A leased or running job is not flipped under its handler: the request is
   * recorded (`cancelRequestedAt`, the first one kept) and the job is answered as it stands; its
   * handler's `ctx.signal` aborts with a JobCancelledError at once (NOTIFY) or at the holder's
   * next heartbeat, whichever process holds it. It then ends `cancelled` if its attempt fails (it
   * stopped on the signal) or nothing holds it any more (lease lost, worker gone), or `succeeded`
   * if the handler finished anyway; it is never retried or claimed again. JOB_STATE_CONFLICT when
   * already finished (succeeded, dead_lettered, cancelled); JOB_NOT_FOUND.
   */
  cancel(id: string): Promise<Job>;
  /** Replays up to `limit` (1..1000, default 100) dead-lettered jobs, oldest first; answers their summaries. */
  replayDeadLetters(opts?: { limit?: number; queue?: string; tenantId?: string }): Promise<JobSummary[]>;
  queueDepth(queue: string): Promise<StateCounts>;
  /** Every queue with at least one job or paused, with counts by state and whether it is paused. */
  queues(): Promise<Array<{ queue: string; paused: boolean; pausedAt: Date | null; counts: StateCounts }>>;
  /**
   * Stops every worker process on the database from claiming `queue` (from its next claim);
   * jobs already claimed run on, and enqueues are accepted. Idempotent. QUEUE_NOT_FOUND when
   * the queue has no job, no live worker and is not paused.
   */
  pauseQueue(queue: string): Promise<QueuePauseState>;
  /** Lets workers claim `queue` again and wakes them. Idempotent; QUEUE_NOT_FOUND as pauseQueue. */
  resumeQueue(queue: string): Promise<QueuePauseState>;
  pausedQueues(): Promise<PausedQueue[]>;
  /** A pending job (delayed or not) becomes due now; JOB_STATE_CONFLICT unless pending. */
  runNow(id: string): Promise<Job>;
  /** replay, cancel or runNow on each of 1..100 distinct ids; per-id outcomes, in input order. */
  bulk(action: BulkAction, ids: readonly string[]): Promise<BulkItemResult[]>;
  /** Counts by queue and state, paused queues and the jobs finished in the last `windowSeconds` (1..3600, default 60), from one statement. */
  stats(opts?: { windowSeconds?: number }): Promise<StatsSnapshot>;
  workers(): Promise<WorkerInfo[]>;
  /** The database's health as Baton sees it: bounded queries, read at most once per HEALTH_CACHE_MS. */
  health(): Promise<DatabaseHealth>;
}

export const LIST_LIMIT_DEFAULT = 50;
/** The largest `limit` of a job listing (admin.listJobs and the HTTP listings). */
export const LIST_LIMIT_MAX = 500;
/** The largest `offset` of a job listing: an offset page reads every row before it, so page deeper by cursor. */
export const LIST_OFFSET_MAX = 100_000;
export const LIST_TOTAL_CAP = 1_000;
export const DLQ_REPLAY_LIMIT_DEFAULT = 100;
/** The most dead-lettered jobs one admin.replayDeadLetters call replays. */
export const DLQ_REPLAY_LIMIT_MAX = 1_000;
export function assertJobId(id: string): void {
  if (!isJobId(id)) {
    throw new BatonError('INVALID_ARGUMENT', `invalid job id ${JSON.stringify(String(id).slice(0, 40))}: expected a positive integer`, {
      details: { field: 'id' },
    });
  }
}

const badCursor = (message: string): never => {
  throw new BatonError('INVALID_ARGUMENT', message, { details: { field: 'cursor' } });
};

/**
 * The cursor of a keyset-paged listing (jobs, workflow runs, outbox messages): the id of the
 * last item of an earlier page, which replaces the offset. Throws INVALID_ARGUMENT otherwise.
 */
export function assertListCursor(cursor: unknown, offset: number): asserts cursor is string | undefined {
  if (cursor === undefined) return;
  if (typeof cursor !== 'string' || !isJobId(cursor)) badCursor('cursor must be a nextCursor of an earlier page');
  if (offset !== 0) badCursor('cursor and offset exclude each other: a cursor page starts right after its cursor');
}

/** A job listing's cursor also needs a listing that pages by cursor (pagesByCursor). */
function checkCursor(filter: ListJobsFilter, offset: number, byCursor: boolean): void {
  if (filter.cursor === undefined) return;
  assertListCursor(filter.cursor, offset);
  if (!byCursor) {
    badCursor(
      'cursor pages exact listings in id order only: page a windowed listing, or one whose filters search the finished jobs a window at a time (a job type, a state beside a queue or tenant), by offset',
    );
  }
}

function intIn(name: string, v: number | undefined, min: number, max: number, dflt: number): number {
  if (v === undefined) return dflt;
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new BatonError('INVALID_ARGUMENT', `${name} must be an integer between ${min} and ${max}`, { details: { field: name } });
  }
  return v;
}

export function emptyCounts(): StateCounts {
  return Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as StateCounts;
}

async function readHealth(executor: Executor): Promise<DatabaseHealth> {
  const [queues, tables, horizon] = await Promise.all([
    executor.healthOldestDue(),
    executor.healthTableStats(),
    executor.healthServerHorizon(),
  ]);
  return { readAt: new Date(), queues, tables, horizon };
}

export interface AdminHooks {
  /** A cancel request was recorded on this leased or running job (the engine aborts its handler if it holds it). */
  onCancelRequested?: (job: Job & { state: 'leased' | 'running' }) => void;
}

export function createAdmin(executor: Executor, wake: (queue: string) => void, hooks: AdminHooks = {}): AdminApi {
  let healthCache: { at: number; read: Promise<DatabaseHealth> } | null = null;
  async function mustGet(id: string, opts: { tenantId?: string | undefined } = {}): Promise<Job> {
    assertJobId(id);
    const job = await executor.jobGet({ id, tenantId: opts.tenantId });
    if (!job) throw new BatonError('JOB_NOT_FOUND', `job ${id} not found`, { details: { id } });
    return job;
  }

  const api: AdminApi = {
    getJob: mustGet,

    async listJobs(filter: ListJobsFilter = {}): Promise<JobPage> {
      if (filter.state !== undefined && !JOB_STATES.includes(filter.state)) {
        throw new BatonError('INVALID_ARGUMENT', `state must be one of ${JOB_STATES.join(', ')}`, { details: { field: 'state' } });
      }
      const limit = intIn('limit', filter.limit, 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT);
      const offset = intIn('offset', filter.offset, 0, LIST_OFFSET_MAX, 0);
      checkSortAndTimes(filter);
      const windowed = isWindowedListing(filter);
      const byCursor = pagesByCursor(filter);
      checkCursor(filter, offset, byCursor);
      const where = {
        state: filter.state,
        tenantId: filter.tenantId,
        queue: filter.queue,
        jobType: filter.jobType,
        createdAfter: filter.createdAfter,
        createdBefore: filter.createdBefore,
        due: filter.due,
      };
      const [jobs, total] = await Promise.all([
        executor.jobList({ ...where, sort: filter.sort, order: filter.order, limit, offset, after: filter.cursor }),
        executor.jobCountCapped({ ...where, cap: LIST_TOTAL_CAP }),
      ]);
      const nextCursor = byCursor && jobs.length === limit ? (jobs.at(-1)?.id ?? null) : null;
      return { jobs, total, limit, offset, nextCursor, windowed };
    },

    async replay(id: string): Promise<Job> {
      assertJobId(id);
      const job = await executor.jobReplay({ id });
      if (!job) {
        const current = await mustGet(id);
        throw new BatonError(
          'JOB_STATE_CONFLICT',
          `job ${id} is ${current.state}; only succeeded, dead_lettered or cancelled jobs can be replayed`,
          { details: { id, state: current.state } },
        );
      }
      wake(job.queue);
      return job;
    },

    async cancel(id: string): Promise<Job> {
      assertJobId(id);
      const job = await executor.jobCancel({ id });
      if (!job) {
        const current = await mustGet(id);
        throw new BatonError('JOB_STATE_CONFLICT', `job ${id} is ${current.state}; a finished job cannot be cancelled`, {
          details: { id, state: current.state },
        });
      }
      if (job.state === 'leased' || job.state === 'running') hooks.onCancelRequested?.(job);
      return job;
    },

    async runNow(id: string): Promise<Job> {
      assertJobId(id);
      return runNow(executor, wake, mustGet, id);
    },

    async bulk(action, ids) {
      if (!Array.isArray(ids)) throw new BatonError('INVALID_ARGUMENT', 'ids must be an array', { details: { field: 'ids' } });
      const one = { replay: api.replay, cancel: api.cancel, runNow: api.runNow }[action];
      if (!one) throw new BatonError('INVALID_ARGUMENT', 'action must be replay, cancel or runNow', { details: { field: 'action' } });
      return bulk(ids, one);
    },

    pauseQueue: (queue) => pauseQueue(executor, queue),
    resumeQueue: (queue) => resumeQueue(executor, wake, queue),
    pausedQueues: () => executor.queueListPaused(),

    async stats(opts = {}) {
      const windowSeconds = intIn('windowSeconds', opts.windowSeconds, 1, STATS_WINDOW_SECONDS_MAX, STATS_WINDOW_SECONDS_DEFAULT);
      return toStatsSnapshot(await executor.statsSnapshot({ windowSeconds }), windowSeconds);
    },

    async replayDeadLetters(opts = {}) {
      const limit = intIn('limit', opts.limit, 1, DLQ_REPLAY_LIMIT_MAX, DLQ_REPLAY_LIMIT_DEFAULT);
      const jobs = await executor.jobReplayDeadLetters({ limit, queue: opts.queue, tenantId: opts.tenantId });
      for (const q of new Set(jobs.map((j) => j.queue))) wake(q);
      return jobs;
    },

    async queueDepth(queue: string): Promise<StateCounts> {
      const counts = emptyCounts();
      for (const r of await executor.jobCountsByQueue({ queue })) counts[r.state as JobState] = r.n;
      return counts;
    },

    async queues() {
      const [rows, paused] = await Promise.all([executor.jobCountsByQueue({}), executor.queueListPaused()]);
      const pausedAt = new Map(paused.map((p) => [p.queue, p.pausedAt]));
      const byQueue = new Map<string, StateCounts>();
      for (const r of rows) {
        const c = byQueue.get(r.queue) ?? emptyCounts();
        c[r.state] = r.n;
        byQueue.set(r.queue, c);
      }
      for (const p of paused) if (!byQueue.has(p.queue)) byQueue.set(p.queue, emptyCounts());
      return [...byQueue]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([queue, counts]) => ({ queue, paused: pausedAt.has(queue), pausedAt: pausedAt.get(queue) ?? null, counts }));
    },

    workers: () => executor.workerList(),
    ...flowAdmin(executor, wake),

    health() {
      const now = Date.now();
      if (!healthCache || now - healthCache.at > HEALTH_CACHE_MS) {
        const read = readHealth(executor);
        healthCache = { at: now, read };
        // A failed read is not cached: the next call tries again.
        read.catch(() => {
          if (healthCache?.read === read) healthCache = null;
        });
      }
      return healthCache.read;
    },
  };
  return api;
}
