// The seam between the engine and the database: every operation the engine
// performs, as one method with one params object, returning domain types.
// @internal — not a public API.

import type { DatabaseHealth, WorkerInfo } from '../types/admin.ts';
import type { FlowLimits, FlowSnapshot } from '../types/flow-control.ts';
import type {
  AttemptError,
  EnqueueWindow,
  InsertedJob,
  Job,
  JobState,
  JobSummary,
  LeasedJob,
  OnParentFailure,
  TerminalState,
} from '../types/job.ts';
import type { JobSortKey, SortOrder } from '../types/job-sort.ts';
import type { PausedQueue, StatsRow } from '../types/queue.ts';
import type { TraceCarrier } from '../types/trace.ts';
import type { Queryable } from './queryable.ts';

/** A validated, defaulted job spec ready to insert. */
export interface NewJob {
  tenantId: string;
  queue: string;
  jobType: string;
  payload: unknown;
  priority: number;
  /** ISO time, or null to use now() + delayMs. */
  runAt: string | null;
  delayMs: number | null;
  maxAttempts: number;
  idempotencyKey: string | null;
  /** The producer's trace context, stored with the job. */
  traceContext: TraceCarrier | null;
  /** Flow control: the job's concurrency key, and its own cap for that key. */
  concurrencyKey?: string | null;
  concurrencyLimit?: number | null;
  /** Parents (distinct, in id order): the job waits for them (see migration 0016). */
  dependsOn?: string[];
  onParentFailure?: OnParentFailure;
  /** Debounce or throttle by key: enqueued through jobEnqueueWindowed, never jobInsertMany. */
  window?: EnqueueWindow;
}

/** Where retention's sweep of job_windows goes on from: the last row it examined. */
export interface WindowCursor {
  /** until_at as PostgreSQL writes it (microseconds kept). */
  untilAt: string;
  tenantId: string;
  queue: string;
  key: string;
}

export interface WindowSweepResult {
  deleted: number;
  /** The cursor after this batch; null when it examined no row. */
  last: WindowCursor | null;
  /** The walk reached the rows whose window is still open. */
  done: boolean;
}

export interface Lease {
  id: string;
  token: string;
}

/** An error entry as the worker builds it; the database adds the time. */
export type AttemptErrorInput = Omit<AttemptError, 'at'>;

export interface JobInsertManyParams {
  jobs: NewJob[];
  /** Caller's client (their transaction); the pool otherwise. */
  client?: Queryable;
  /**
   * Channels to NOTIFY from the insert statement itself, delivered at the commit of its
   * transaction (used with `client`: the caller's transaction). Sent only when the statement
   * inserted at least one row.
   */
  notify?: string[];
  /**
   * Channels to NOTIFY in a statement of their own, run by the database right after the
   * insert's commit (used without `client`). The enqueue resolves with the insert; a failed
   * NOTIFY is reported to `onError` and never fails it.
   */
  notifyAfter?: { channels: string[]; onError: (err: unknown) => void };
}
export interface JobClaimParams {
  queue: string;
  limit: number;
  owner: string;
  leaseMs: number;
  intoRunning: boolean;
}
/** Where a fair claim's round-robin stands: the tenant served last and how much of its slice it used. */
export interface FairCursor {
  tenant: string;
  used: number;
}
export interface FlowClaimParams extends JobClaimParams {
  /** Round-robin across tenants (else FIFO: claim order across the queue). */
  fair: boolean;
  /** The queue has a flow_queues row: claim under its caps and rate limits. */
  controlled: boolean;
  cursor: FairCursor;
  /** Where the walk over concurrency keys starts (a controlled claim walks at most 64 keys). */
  keyCursor: string;
  /** Called just before the statement that writes the leases is sent (they are proven from then). */
  onLeaseStatement?: () => void;
  /** The queue had one tenant at the last fair claim: try the small one-tenant statement first. */
  solo?: boolean;
  /**
   * Whether the queue may never have held a job of a tenant other than 'default' (the default,
   * until a claim answers false): then the FIFO pick is tried first, behind its mark's probe.
   */
  plain?: boolean;
}
export interface FlowClaimResult {
  jobs: LeasedJob[];
  /** The cursor after this claim (unchanged when it took nothing fair). */
  cursor: FairCursor;
  keyCursor: string;
  /** A rate limit held jobs back: its bucket has a token again in this many ms. */
  wakeMs: number | null;
  /** A cap or rate limit bound this claim. */
  limited: boolean;
  /**
   * The claim may have stopped at the tenants' slices of a round (more than one tenant had
   * jobs), so one that took fewer jobs than asked may find more at once. False for a queue with
   * one tenant: its claim took every due job up to the limit.
   */
  sliced: boolean;
  /** The queue had one tenant (or none) with pending jobs: the next fair claim may try `solo`. */
  solo: boolean;
  /** The queue is still unmarked (never held another tenant's job): the next claim may try `plain`. */
  plain: boolean;
}
export interface JobPurgeScanParams {
  after: string;
  read: number;
  ages: Readonly<Record<TerminalState, number | null>>;
  epoch: string;
}
export interface JobPurgeScanResult {
  last: string | null;
  done: boolean;
  /** How many jobs of each queue and state it deleted (only those with some). */
  deleted: Array<{ queue: string; state: TerminalState; n: number }>;
}
export interface JobCompleteItem extends Lease {
  result: unknown;
  /**
   * The queue the job was claimed from, when the caller knows it: lets the store skip
   * bookkeeping it did for that queue moments ago (the finished-jobs map of migration 0024).
   * The job's state and result are written the same either way.
   */
  queue?: string;
}
export interface JobFailItem extends Lease {
  error: AttemptErrorInput;
  terminal: boolean;
}
export interface HeartbeatResult {
  /** Ids whose lease was still current (the others were fenced off). */
  alive: Set<string>;
  /** Those of `alive` whose job has a cancel request. */
  cancelRequested: Set<string>;
}
export interface ReapedJob {
  id: string;
  state: JobState;
  queue: string;
  /** true: lease expired; false: fast reclaim of a gone worker's lease. */
  expired: boolean;
}
export interface JobListParams {
  state?: JobState | undefined;
  tenantId?: string | undefined;
  queue?: string | undefined;
  jobType?: string | undefined;
  /** Created at or after / strictly before. */
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
  /** run_at <= now() (true) or > now() (false). */
  due?: boolean | undefined;
  /** Default: id, desc (newest first). */
  sort?: JobSortKey | undefined;
  order?: SortOrder | undefined;
  limit: number;
  offset: number;
  /**
   * A cursor: the id of the last job of the previous page. The page holds the jobs past it in the
   * listing's order (id order only, not a windowed listing).
   */
  after?: string | undefined;
}
/** A worker as the admin API shows it (one definition, in src/types/admin.ts). */
export type WorkerRow = WorkerInfo;

export interface Executor {
  jobInsertMany(p: JobInsertManyParams): Promise<InsertedJob[]>;
  /**
   * One job with a debounce or throttle (`job.window`): under the lock of its (tenant, queue,
   * key) row, creates it, folds it into the key's pending job, or drops it (migration 0035).
   * In `client`'s transaction when given (the key stays locked until its commit), else in one
   * of its own.
   */
  jobEnqueueWindowed(p: { job: NewJob & { window: EnqueueWindow }; client?: Queryable }): Promise<InsertedJob>;
  /**
   * Retention: deletes up to `limit` job_windows rows after `after` whose window has closed and
   * whose job is no longer pending and unclaimed, fenced by the leader's `epoch`.
   */
  jobWindowSweep(p: { after: WindowCursor | null; limit: number; epoch: string }): Promise<WindowSweepResult>;
  /** NOTIFY `channels`; on `client`, delivered at the commit of its transaction. */
  jobNotify(p: { channels: string[]; client?: Queryable }): Promise<void>;
  jobClaim(p: JobClaimParams): Promise<LeasedJob[]>;
  /** The fair claim, or (controlled) the claim under caps and rate limits. */
  jobClaimFlow(p: FlowClaimParams): Promise<FlowClaimResult>;
  /** Which of these queues are flow-controlled (claimed through jobClaimFlow with controlled). */
  flowListControlled(p: { queues: string[] }): Promise<Set<string>>;
  flowSetQueue(p: { queue: string } & FlowLimits): Promise<void>;
  flowSetKey(p: { pattern: string } & FlowLimits): Promise<void>;
  /** false when the pattern had no limits. */
  flowDeleteKey(p: { pattern: string }): Promise<boolean>;
  flowSetWeight(p: { tenantId: string; weight: number | null }): Promise<void>;
  flowSnapshot(p: { groups: number }): Promise<Omit<FlowSnapshot, 'held'>>;
  /** Returns ids whose lease was still current (the others were fenced off). */
  jobMarkRunningMany(p: { leases: Lease[] }): Promise<Set<string>>;
  /** Renews the leases: `alive` the ids still held, `cancelRequested` those of them with a cancel request. */
  jobHeartbeatMany(p: { leases: Lease[]; leaseMs: number }): Promise<HeartbeatResult>;
  /** Stores each lease's latest progress (`progress`: JSON text), fenced by its token. Returns the ids written. */
  jobProgressMany(p: { items: Array<Lease & { progress: string }> }): Promise<Set<string>>;
  /** Succeeded; with `deleteRows` the rows are deleted instead (no result kept). Returns the ids written. */
  jobCompleteMany(p: { items: JobCompleteItem[]; deleteRows?: boolean }): Promise<Set<string>>;
  /** Returns id -> new state for the rows written. */
  jobFailMany(p: { items: JobFailItem[]; backoffBaseMs: number; backoffCapMs: number }): Promise<Map<string, JobState>>;
  /** Back to pending (refund: attempt - 1); without refund a spent budget dead-letters. Returns the ids written. */
  jobReleaseMany(p: { leases: Lease[]; refundAttempt: boolean }): Promise<Set<string>>;
  jobReap(p: { limit: number; graceMs: number; fastReclaim: boolean }): Promise<ReapedJob[]>;
  /**
   * One step of retention's walk over the jobs in id order, from after `after` ('0': the start),
   * reading `read` rows at most (any state): deletes the finished ones older than their state's
   * age (null keeps). A leader-only write, fenced by `epoch` (deletes nothing unless it holds
   * the lease). `last`: the last id examined (null: none); `done`: the walk reached the jobs
   * created after the youngest age, or the end.
   */
  jobPurgeScan(p: JobPurgeScanParams): Promise<JobPurgeScanResult>;
  /** The live leases `owner` holds, with their queue. */
  jobLeasesOwned(p: { owner: string }): Promise<Array<Lease & { queue: string }>>;
  /** No token issued before this call is greater than the answer. */
  jobTokenHighWater(): Promise<bigint>;
  /** With tenantId, null for another tenant's job too: the statement itself is scoped. */
  jobGet(p: { id: string; tenantId?: string | undefined }): Promise<Job | null>;
  jobList(p: JobListParams): Promise<JobSummary[]>;
  jobCountCapped(p: Omit<JobListParams, 'offset' | 'limit'> & { cap: number }): Promise<number>;
  jobReplay(p: { id: string }): Promise<Job | null>;
  /**
   * Cancels a pending or waiting job at once; records a cancel request on a leased or running
   * one (NOTIFY to the holder on the cancel channel, see cancelChannelFor). Answers the job as
   * it stands after that (state cancelled, or live with cancelRequestedAt), or null when it is
   * finished or unknown.
   */
  jobCancel(p: { id: string }): Promise<Job | null>;
  /** A pending job due at once (run_at = least(run_at, now())); null unless pending. */
  jobRunNow(p: { id: string }): Promise<Job | null>;
  jobReplayDeadLetters(p: { limit: number; queue?: string | undefined; tenantId?: string | undefined }): Promise<JobSummary[]>;
  jobCountsByQueue(p: { queue?: string | undefined }): Promise<Array<{ queue: string; state: JobState; n: number }>>;
  /** Pauses a known queue (idempotent); null when the queue is unknown (no job, no live worker, not paused). */
  queuePause(p: { queue: string }): Promise<Date | null>;
  /** Resumes a queue; null when unknown, else whether it was paused. */
  queueResume(p: { queue: string }): Promise<{ wasPaused: boolean } | null>;
  queueListPaused(): Promise<PausedQueue[]>;
  /** Counts, paused queues and the last `windowSeconds` of finished jobs, from one statement. */
  statsSnapshot(p: { windowSeconds: number }): Promise<StatsRow>;
  workerSweep(p: { lockNamespace: number }): Promise<void>;
  /** Forgets workers gone for over an hour with no live lease; a leader-only write, fenced by `epoch`. */
  workerPrune(p: { epoch: string }): Promise<void>;
  workerTouch(p: { id: string; inFlight: number }): Promise<void>;
  workerList(): Promise<WorkerRow[]>;
  /** Per queue with due pending jobs: seconds since the oldest became due, and how many are due. */
  healthOldestDue(): Promise<DatabaseHealth['queues']>;
  /** Dead row versions of the jobs table (statistics) and whether a vacuum of it runs now. */
  jobDeadTuples(): Promise<{ dead: number; vacuuming: boolean }>;
  /** VACUUM of the jobs table, indexes included, without a statement timeout; skipped if its lock is taken. */
  jobVacuum(): Promise<void>;
  /** Sizes and vacuum state of the schema's tables. */
  healthTableStats(): Promise<DatabaseHealth['tables']>;
  /** The server's oldest transaction horizon (see DatabaseHealth). */
  healthServerHorizon(): Promise<DatabaseHealth['horizon']>;
  /** What live workers can run: per worker, the queues it works and the job types it has handlers for. */
  workerListLive(): Promise<Array<{ queues: string[]; jobTypes: string[] }>>;
}

/** Holds this process's presence lock on a dedicated connection, re-acquiring it after a reconnect. */
export interface Presence {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** True while the lock is held, as far as this process knows (false from the moment its session is seen lost). */
  readonly held: boolean;
  /** The presence lock's key while it is held, else null (the leader lease records it). */
  readonly lockKey: number | null;
}

/** One LISTEN connection per process. */
export interface NotificationListener {
  start(channels: string[]): Promise<void>;
  stop(): Promise<void>;
}
