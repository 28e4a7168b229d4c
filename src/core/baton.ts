// The public shape of an engine instance: what createBaton() returns. The
// daemon, HTTP edge, benchmarks and tests all program against this.

import type { EventEmitter } from 'node:events';
import type { EngineConfig } from './config.ts';
import type { EnqueueResult, Job, JobSpec, JobState, JobSummary } from './job.ts';
import type { MigrateResult } from '../db/migrate.ts';
import type { Queryable } from '../db/pg/pool.ts';

export interface EnqueueOptions {
  /**
   * Run the insert on this client (the caller's open transaction). Baton never begins,
   * commits or rolls back on it. The wake-up NOTIFY is sent inside that transaction, so
   * PostgreSQL delivers it only if and when the caller commits (pass notify: false to skip it
   * and call baton.wake(queue) after COMMIT yourself).
   */
  client?: Queryable;
  /** Default true. */
  notify?: boolean;
}

export interface ListJobsFilter {
  state?: JobState;
  tenantId?: string;
  queue?: string;
  jobType?: string;
  /** 1..500, default 50. */
  limit?: number;
  /** >= 0, default 0. */
  offset?: number;
}

export interface JobPage {
  /** Summaries: bulky fields bounded (see JobSummary). */
  jobs: JobSummary[];
  /** Total rows matching the filter (capped count; see admin docs). */
  total: number;
  limit: number;
  offset: number;
}

export type StateCounts = Record<JobState, number>;

export interface WorkerInfo {
  id: string;
  hostname: string;
  pid: number;
  /** queue -> concurrency */
  queues: Record<string, number>;
  inFlight: number;
  startedAt: Date;
  lastSeenAt: Date;
  /** True while the worker's database session holds its presence lock. */
  alive: boolean;
}

export interface AdminApi {
  /** Throws BatonError JOB_NOT_FOUND. */
  getJob(id: string): Promise<Job>;
  listJobs(filter?: ListJobsFilter): Promise<JobPage>;
  /** Back to pending with a fresh attempt budget; replay_count + 1. JOB_STATE_CONFLICT unless terminal. */
  replay(id: string): Promise<Job>;
  /** JOB_STATE_CONFLICT unless pending. */
  cancel(id: string): Promise<Job>;
  /** Replays up to `limit` (1..1000, default 100) dead-lettered jobs, oldest first; answers their summaries. */
  replayDeadLetters(opts?: { limit?: number; queue?: string; tenantId?: string }): Promise<JobSummary[]>;
  queueDepth(queue: string): Promise<StateCounts>;
  /** Every queue with at least one job, with counts by state. */
  queues(): Promise<Array<{ queue: string; counts: StateCounts }>>;
  workers(): Promise<WorkerInfo[]>;
}

/** In-process counters, for metrics. Monotonic unless named otherwise. */
export interface EngineStats {
  claimed: number;
  succeeded: number;
  retried: number;
  deadLettered: number;
  /** Outcome/heartbeat/mark-running writes that matched no row because the token was stale. */
  fencedWrites: number;
  leasesLost: number;
  reclaimed: number;
  /** Leases found held without this worker knowing (a claim whose reply was lost) and given back, attempt refunded. */
  strandedReleased: number;
  /** Gauges: queue -> { concurrency, inFlight }. */
  slots: Record<string, { concurrency: number; inFlight: number }>;
  /** Whether this worker holds its presence lock (it claims only then); null before start() or with no queues. */
  presenceHeld: boolean | null;
}

/** Events the engine emits (on baton.events) for metrics and logs. */
export interface EngineEvents {
  enqueued: [{ queue: string; count: number }];
  claimed: [{ queue: string; count: number; durationMs: number }];
  started: [{ job: Job; startLatencyMs: number }];
  succeeded: [{ job: Job; durationMs: number }];
  retried: [{ job: Job; error: unknown }];
  deadLettered: [{ job: Job; error: unknown }];
  fenced: [{ kind: 'complete' | 'fail' | 'heartbeat' | 'start' | 'release'; count: number }];
  leaseLost: [{ job: Job }];
  reaped: [{ count: number; fast: boolean }];
  /**
   * Leases given back unrun or unfinished, attempt refunded: 'stranded' (claimed with the
   * reply lost), 'late' (a claim answered past the heartbeat deadline), 'shutdown' (claimed
   * during stop(), or aborted by the drain deadline).
   */
  released: [{ queue: string; count: number; reason: 'stranded' | 'late' | 'shutdown' }];
  error: [{ where: string; error: unknown }];
}

export interface Baton {
  readonly config: EngineConfig;
  /** Creates/updates the schema. Safe from many processes at once. */
  migrate(): Promise<MigrateResult>;
  /** Starts claiming (for config.queues), heartbeats, reaper and listener. Idempotent. */
  start(): Promise<void>;
  /** Stops claiming, lets in-flight jobs finish within drainMs, releases unstarted leases (attempt refunded). Idempotent. */
  stop(opts?: { drainMs?: number }): Promise<void>;
  /** Throws BatonError INVALID_ARGUMENT for a bad spec (e.g. NUL bytes, bad names). */
  enqueue(spec: JobSpec, opts?: EnqueueOptions): Promise<EnqueueResult>;
  /** One INSERT statement for the batch; results in input order. */
  enqueueMany(specs: JobSpec[], opts?: EnqueueOptions): Promise<EnqueueResult[]>;
  /** Wakes workers of `queue` (in this process at once, others by NOTIFY). For use after a caller's COMMIT. */
  wake(queue: string): Promise<void>;
  readonly admin: AdminApi;
  readonly events: EventEmitter<EngineEvents>;
  stats(): EngineStats;
}
