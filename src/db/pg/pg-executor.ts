// Executor on node-postgres: runs the named queries, maps rows to domain types
// and translates driver errors. Thin by design: the SQL carries the invariants.
// Each group of methods is a module of functions (job-insert.ts, job-lease.ts, job-list.ts,
// job-admin.ts, health.ts, workers.ts, and PgFlow); this class holds what outlives a call.

import type {
  Executor,
  FlowClaimParams,
  FlowClaimResult,
  HeartbeatResult,
  JobClaimParams,
  JobCompleteItem,
  JobFailItem,
  JobInsertManyParams,
  JobListParams,
  JobPurgeScanParams,
  JobPurgeScanResult,
  Lease,
  NewJob,
  ReapedJob,
  WindowCursor,
  WindowSweepResult,
  WorkerRow,
} from '../../driver/executor.ts';
import type { DatabaseHealth } from '../../types/admin.ts';
import type { FlowLimits, FlowSnapshot } from '../../types/flow-control.ts';
import type { EnqueueWindow, InsertedJob, JobState, LeasedJob } from '../../types/job.ts';
import type { PausedQueue, StatsRow } from '../../types/queue.ts';
import { type ExecutorStatements, executorStatements } from './executor-statements.ts';
import * as health from './health.ts';
import * as admin from './job-admin.ts';
import * as insert from './job-insert.ts';
import * as lease from './job-lease.ts';
import * as listing from './job-list.ts';
import { enqueueWindowed, sweepWindows } from './job-window.ts';
import { PgFlow } from './pg-flow-control.ts';
import type { PgPoolLike, Queryable } from './pool.ts';
import { unnamedQueryable } from './pooler-client.ts';
import { RecordedBlocks } from './recorded-blocks.ts';
import * as workers from './workers.ts';

export class PgExecutor implements Executor {
  /** The pool and the schema's named statements, shared by every module. */
  readonly #db: ExecutorStatements;
  /** The fair and flow-controlled claims and the flow admin statements. */
  readonly #flowStore: PgFlow;
  /** Queues this executor has marked keyed (flow_queues.keyed is never reset by Baton). */
  readonly #keyedQueues = new Set<string>();
  /** Blocks of finished_blocks this executor's completions recorded lately (see recorded-blocks.ts). */
  readonly #recordedBlocks: RecordedBlocks;
  readonly #unnamed: boolean;

  /**
   * `schema` must already be quoted (see quoteSchema). `now`: the monotonic clock (ms) that
   * bounds how long recorded blocks are trusted (tests stop it).
   */
  /**
   * `unnamed`: a caller's client (enqueue in the caller's transaction) is sent no named
   * statement, for a caller's pool behind a transaction pooler (pooler-client.ts).
   */
  constructor(pool: PgPoolLike, quotedSchema: string, opts: { now?: () => number; unnamed?: boolean } = {}) {
    this.#unnamed = opts.unnamed === true;
    this.#recordedBlocks = new RecordedBlocks(opts.now);
    this.#db = executorStatements(pool, quotedSchema);
    this.#flowStore = new PgFlow(pool, this.#db.flow);
  }

  jobInsertMany(p: JobInsertManyParams): Promise<InsertedJob[]> {
    const client = p.client && this.#unnamed ? unnamedQueryable(p.client) : p.client;
    return insert.insertMany(this.#db, this.#keyedQueues, client === p.client ? p : { ...p, client });
  }

  async jobEnqueueWindowed(p: { job: NewJob & { window: EnqueueWindow }; client?: Queryable }): Promise<InsertedJob> {
    await insert.markKeyed(this.#db, this.#keyedQueues, [p.job]);
    const client = p.client && this.#unnamed ? unnamedQueryable(p.client) : p.client;
    return enqueueWindowed(this.#db, client ? { job: p.job, client } : { job: p.job });
  }

  jobWindowSweep(p: { after: WindowCursor | null; limit: number; epoch: string }): Promise<WindowSweepResult> {
    return sweepWindows(this.#db, p);
  }

  jobNotify(p: { channels: string[]; client?: Queryable }): Promise<void> {
    return insert.notify(this.#db, p.client && this.#unnamed ? { ...p, client: unnamedQueryable(p.client) } : p);
  }

  jobClaim(p: JobClaimParams): Promise<LeasedJob[]> {
    return lease.claim(this.#db, p);
  }

  jobClaimFlow(p: FlowClaimParams): Promise<FlowClaimResult> {
    return this.#flowStore.claim(p);
  }

  flowListControlled(p: { queues: string[] }): Promise<Set<string>> {
    return this.#flowStore.controlled(p);
  }

  flowSetQueue(p: { queue: string } & FlowLimits): Promise<void> {
    return this.#flowStore.setQueue(p);
  }

  flowSetKey(p: { pattern: string } & FlowLimits): Promise<void> {
    return this.#flowStore.setKey(p);
  }

  flowDeleteKey(p: { pattern: string }): Promise<boolean> {
    return this.#flowStore.deleteKey(p);
  }

  flowSetWeight(p: { tenantId: string; weight: number | null }): Promise<void> {
    return this.#flowStore.setWeight(p);
  }

  flowSnapshot(p: { groups: number }): Promise<Omit<FlowSnapshot, 'held'>> {
    return this.#flowStore.snapshot(p);
  }

  jobMarkRunningMany(p: { leases: Lease[] }): Promise<Set<string>> {
    return lease.markRunningMany(this.#db, p);
  }

  jobHeartbeatMany(p: { leases: Lease[]; leaseMs: number }): Promise<HeartbeatResult> {
    return lease.heartbeatMany(this.#db, p);
  }

  jobProgressMany(p: { items: Array<Lease & { progress: string }> }): Promise<Set<string>> {
    return lease.progressMany(this.#db, p);
  }

  jobCompleteMany(p: { items: JobCompleteItem[]; deleteRows?: boolean }): Promise<Set<string>> {
    return lease.completeMany(this.#db, this.#recordedBlocks, p);
  }

  jobFailMany(p: { items: JobFailItem[]; backoffBaseMs: number; backoffCapMs: number }): Promise<Map<string, JobState>> {
    return lease.failMany(this.#db, p);
  }

  jobReleaseMany(p: { leases: Lease[]; refundAttempt: boolean }): Promise<Set<string>> {
    return lease.releaseMany(this.#db, p);
  }

  jobReap(p: { limit: number; graceMs: number; fastReclaim: boolean }): Promise<ReapedJob[]> {
    return lease.reap(this.#db, p);
  }

  jobLeasesOwned(p: { owner: string }): Promise<Array<Lease & { queue: string }>> {
    return lease.leasesOwned(this.#db, p);
  }

  jobTokenHighWater(): Promise<bigint> {
    return lease.tokenHighWater(this.#db);
  }

  jobPurgeScan(p: JobPurgeScanParams): Promise<JobPurgeScanResult> {
    return admin.purgeScan(this.#db, p);
  }

  jobGet(p: { id: string; tenantId?: string | undefined }) {
    return admin.get(this.#db, p);
  }

  jobList(p: JobListParams) {
    return listing.list(this.#db, p);
  }

  jobCountCapped(p: Omit<JobListParams, 'offset' | 'limit'> & { cap: number }) {
    return listing.countCapped(this.#db, p);
  }

  jobRunNow(p: { id: string }) {
    return admin.runNow(this.#db, p);
  }

  queuePause(p: { queue: string }): Promise<Date | null> {
    return admin.queuePause(this.#db, p);
  }

  queueResume(p: { queue: string }): Promise<{ wasPaused: boolean } | null> {
    return admin.queueResume(this.#db, p);
  }

  queueListPaused(): Promise<PausedQueue[]> {
    return admin.queueListPaused(this.#db);
  }

  statsSnapshot(p: { windowSeconds: number }): Promise<StatsRow> {
    return admin.statsSnapshot(this.#db, p);
  }

  jobReplay(p: { id: string }) {
    return admin.replay(this.#db, p);
  }

  jobCancel(p: { id: string }) {
    return admin.cancel(this.#db, p);
  }

  jobReplayDeadLetters(p: { limit: number; queue?: string | undefined; tenantId?: string | undefined }) {
    return admin.replayDeadLetters(this.#db, p);
  }

  jobDeadTuples() {
    return health.jobDeadTuples(this.#db);
  }

  jobVacuum() {
    return health.jobVacuum(this.#db);
  }

  jobCountsByQueue(p: { queue?: string | undefined }) {
    return admin.countsByQueue(this.#db, p);
  }

  workerSweep(p: { lockNamespace: number }) {
    return workers.sweep(this.#db, p);
  }

  workerPrune(p: { epoch: string }) {
    return workers.prune(this.#db, p);
  }

  workerTouch(p: { id: string; inFlight: number }) {
    return workers.touch(this.#db, p);
  }

  healthOldestDue(): Promise<DatabaseHealth['queues']> {
    return health.oldestDue(this.#db);
  }

  healthTableStats(): Promise<DatabaseHealth['tables']> {
    return health.tableStats(this.#db);
  }

  healthServerHorizon(): Promise<DatabaseHealth['horizon']> {
    return health.serverHorizon(this.#db);
  }

  workerListLive(): Promise<Array<{ queues: string[]; jobTypes: string[] }>> {
    return workers.listLive(this.#db);
  }

  workerList(): Promise<WorkerRow[]> {
    return workers.list(this.#db);
  }
}
