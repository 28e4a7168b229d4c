// Executor on node-postgres: runs the named queries, maps rows to domain types
// and translates driver errors. Thin by design: the SQL carries the invariants.

import { cancelChannelFor, channelFor } from '../../driver/channels.ts';
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
  ReapedJob,
  WorkerRow,
} from '../../driver/executor.ts';
import { quoteSchema } from '../../driver/schema-name.ts';
import type { DatabaseHealth } from '../../types/admin.ts';
import type { FlowLimits, FlowSnapshot } from '../../types/flow.ts';
import type { InsertedJob, JobState, LeasedJob } from '../../types/job.ts';
import { isWindowedListing, JOB_SORT_WINDOW } from '../../types/job-sort.ts';
import type { PausedQueue, StatsRow } from '../../types/queue.ts';
import { type ClaimRow, claimJobs } from './claim.ts';
import { insertWithDependencies } from './dependencies.ts';
import { translatePgError } from './errors.ts';
import { canInsertCommitNotify, insertCommitNotify, textArrayLiteral } from './insert-commit-notify.ts';
import { PgFlow } from './pg-flow.ts';
import { type CheckedOut, checkOut, type PgPoolLike, type Queryable, type QueryConfigLike } from './pool.ts';
import { dependencyQueries } from './queries/dependency.ts';
import { type FlowQueries, flowQueries } from './queries/flow.ts';
import { type HealthQueries, healthQueries } from './queries/health.ts';
import { type JobQueries, jobQueries } from './queries/job.ts';
import { ID_RANGE_OPEN, type JobListQueries, jobListQueries } from './queries/job-list.ts';
import { type JobReadQueries, jobReadQueries, shapeValues } from './queries/job-read.ts';
import { type QueueQueries, queueQueries } from './queries/queue.ts';
import { type StatsQueries, statsQueries } from './queries/stats.ts';
import { type WorkerQueries, workerQueries } from './queries/worker.ts';
import { queryRows } from './query-rows.ts';
import { RecordedBlocks } from './recorded-blocks.ts';
import { compareIds, type JobRow, type JobSummaryRow, rowToJob, rowToSummary } from './rows.ts';

export class PgExecutor implements Executor {
  readonly #pool: PgPoolLike;
  readonly #job: JobQueries;
  readonly #read: JobReadQueries;
  readonly #worker: WorkerQueries;
  readonly #health: HealthQueries;
  readonly #jobList: JobListQueries;
  readonly #queue: QueueQueries;
  readonly #stats: StatsQueries;
  readonly #flow: FlowQueries;
  /** The fair and flow-controlled claims and the flow admin statements. */
  readonly #flowStore: PgFlow;
  /** Queues this executor has marked keyed (flow_queues.keyed is never reset by Baton). */
  readonly #keyedQueues = new Set<string>();
  /** Blocks of finished_blocks this executor's completions recorded lately (see recorded-blocks.ts). */
  readonly #recordedBlocks: RecordedBlocks;
  /** The schema as the catalogs spell it (unquoted). */
  readonly #schemaName: string;

  /**
   * `schema` must already be quoted (see quoteSchema). `now`: the monotonic clock (ms) that
   * bounds how long recorded blocks are trusted (tests stop it).
   */
  constructor(pool: PgPoolLike, quotedSchema: string, opts: { now?: () => number } = {}) {
    this.#pool = pool;
    this.#recordedBlocks = new RecordedBlocks(opts.now);
    this.#job = jobQueries(quotedSchema);
    this.#read = jobReadQueries(quotedSchema);
    this.#worker = workerQueries(quotedSchema);
    this.#health = healthQueries(quotedSchema);
    this.#jobList = jobListQueries(quotedSchema);
    this.#queue = queueQueries(quotedSchema);
    this.#stats = statsQueries(quotedSchema);
    this.#flow = flowQueries(quotedSchema);
    this.#flowStore = new PgFlow(pool, this.#flow);
    this.#schemaName = quotedSchema.replace(/^"(.*)"$/, '$1').replaceAll('""', '"');
  }

  #q<R>(query: QueryConfigLike, values: unknown[], on: Queryable = this.#pool): Promise<R[]> {
    return queryRows<R>(on, query, values);
  }

  async jobInsertMany(p: JobInsertManyParams): Promise<InsertedJob[]> {
    // A keyed job's queue becomes flow-controlled before the job exists, in a commit of its own
    // (so also ahead of a caller's transaction): no FIFO or fair claim ever sees a keyed job.
    const keyed = [...new Set(p.jobs.filter((j) => j.concurrencyKey != null).map((j) => j.queue))].filter((q) => !this.#keyedQueues.has(q));
    if (keyed.length > 0) {
      await this.#q(this.#flow.markKeyed, [keyed]);
      for (const q of keyed) this.#keyedQueues.add(q);
    }
    if (p.jobs.some((j) => j.dependsOn)) {
      const dep = dependencyQueries(quoteSchema(this.#schemaName));
      return insertWithDependencies({ pool: this.#pool, dep, job: this.#job, channelOf: (q) => channelFor(this.#schemaName, q) }, p);
    }
    const on = p.client ?? this.#pool;
    const payload = JSON.stringify(
      p.jobs.map((j) => ({
        tenant_id: j.tenantId,
        queue: j.queue,
        job_type: j.jobType,
        payload: j.payload === undefined ? null : j.payload,
        priority: j.priority,
        run_at: j.runAt,
        delay_ms: j.delayMs,
        max_attempts: j.maxAttempts,
        idempotency_key: j.idempotencyKey,
        trace_context: j.traceContext,
        concurrency_key: j.concurrencyKey ?? null,
        concurrency_limit: j.concurrencyLimit ?? null,
      })),
    );
    const notify = p.notify ?? [];
    const inserted = (
      notify.length > 0
        ? await this.#q<JobRow>(this.#job.insertManyNotify, [payload, notify], on)
        : p.notifyAfter && !p.client
          ? await this.#insertThenNotify(payload, p.notifyAfter)
          : await this.#q<JobRow>(this.#job.insertMany, [payload], on)
    ).map(rowToJob);
    // Inserted rows come back in identity order, which follows input order (ORDER BY ord).
    inserted.sort((a, b) => compareIds(a.id, b.id));
    const key = (tenant: string, k: string) => `${tenant}\u0000${k}`;
    const byKey = new Map<string, InsertedJob>();
    for (const job of inserted) {
      if (job.idempotencyKey !== null) byKey.set(key(job.tenantId, job.idempotencyKey), { job, created: true });
    }
    // Keyed specs that inserted nothing collided with an existing job: read those back
    // (a new statement, so it sees a concurrent duplicate that committed meanwhile).
    const missing = p.jobs.filter((j) => j.idempotencyKey !== null && !byKey.has(key(j.tenantId, j.idempotencyKey)));
    if (missing.length > 0) {
      const rows = await this.#q<JobRow>(
        this.#job.selectByKeys,
        [missing.map((j) => j.tenantId), missing.map((j) => j.idempotencyKey)],
        on,
      );
      for (const job of rows.map(rowToJob)) byKey.set(key(job.tenantId, job.idempotencyKey as string), { job, created: false });
    }
    const unkeyed = inserted.filter((j) => j.idempotencyKey === null);
    let u = 0;
    const out: InsertedJob[] = [];
    const seen = new Set<string>();
    for (const spec of p.jobs) {
      if (spec.idempotencyKey === null) {
        const job = unkeyed[u++];
        if (!job) throw translatePgError(new Error('insert returned fewer rows than expected'));
        out.push({ job, created: true });
        continue;
      }
      const k = key(spec.tenantId, spec.idempotencyKey);
      const found = byKey.get(k);
      if (!found) throw translatePgError(new Error(`idempotent job ${spec.idempotencyKey} vanished during enqueue`));
      // A key repeated inside one batch: only its first occurrence created the job.
      out.push(seen.has(k) ? { job: found.job, created: false } : found);
      seen.add(k);
    }
    return out;
  }

  /**
   * The insert, then its NOTIFY in a transaction of its own that PostgreSQL starts only once the
   * insert has committed (WAL flush included): the insert never holds the global notify lock.
   * On a node-postgres client both go in one round trip that answers after the NOTIFY (see
   * insert-commit-notify.ts); on any other client the NOTIFY follows the insert's reply. Only
   * the insert decides the outcome: a failed NOTIFY goes to `after.onError`.
   */
  async #insertThenNotify(payload: string, after: NonNullable<JobInsertManyParams['notifyAfter']>): Promise<JobRow[]> {
    let out: CheckedOut;
    try {
      out = await checkOut(this.#pool);
    } catch (err) {
      throw translatePgError(err);
    }
    const { client } = out;
    if (canInsertCommitNotify(client)) {
      try {
        const { rows, notifyError } = await insertCommitNotify<JobRow>(
          client,
          { ...this.#job.insertMany, values: [payload] },
          { ...this.#job.notify, values: [textArrayLiteral(after.channels)] },
        );
        out.release(notifyError !== null);
        if (notifyError) after.onError(translatePgError(notifyError));
        return rows;
      } catch (err) {
        out.release(true);
        throw translatePgError(err);
      }
    }
    const inserted = client.query<JobRow>({ ...this.#job.insertMany, values: [payload] });
    const notified = inserted.then(() => client.query({ ...this.#job.notify, values: [after.channels] }));
    void Promise.allSettled([inserted, notified]).then(([i, n]) => {
      const errors = [i, n].flatMap((r) => (r.status === 'rejected' ? [translatePgError(r.reason)] : []));
      if (i.status === 'fulfilled' && errors[0]) after.onError(errors[0]);
      out.release(errors.some((e) => e.code === 'DB_UNAVAILABLE'));
    });
    try {
      return (await inserted).rows;
    } catch (err) {
      throw translatePgError(err);
    }
  }

  async jobNotify(p: { channels: string[] }): Promise<void> {
    await this.#q(this.#job.notify, [p.channels]);
  }

  async jobClaim(p: JobClaimParams): Promise<LeasedJob[]> {
    return claimJobs(await this.#q<ClaimRow>(this.#job.claim, [p.queue, p.limit, p.owner, p.intoRunning, p.leaseMs]), p);
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

  /** Runs a lease write (see acceptedIds): the ids it wrote, all of `ids` when the answer is NULL. */
  async #accepted(query: QueryConfigLike, ids: string[], values: unknown[]): Promise<Set<string>> {
    const [row] = await this.#q<{ ids: string[] | null }>(query, values);
    return new Set(row?.ids === null ? ids : (row?.ids ?? []));
  }

  jobMarkRunningMany(p: { leases: Lease[] }): Promise<Set<string>> {
    const { ids, values } = leaseArrays(p.leases);
    return this.#accepted(this.#job.markRunningMany, ids, values);
  }

  async jobHeartbeatMany(p: { leases: Lease[]; leaseMs: number }): Promise<HeartbeatResult> {
    const { ids, values } = leaseArrays(p.leases);
    const [row] = await this.#q<{ ids: string[] | null; cancel: string[] | null }>(this.#job.heartbeatMany, [...values, p.leaseMs]);
    return {
      alive: new Set(row?.ids === null ? ids : (row?.ids ?? [])),
      cancelRequested: new Set((row?.cancel ?? []).map(String)),
    };
  }

  async jobCompleteMany(p: { items: JobCompleteItem[]; deleteRows?: boolean }): Promise<Set<string>> {
    const { ids, values } = leaseArrays(p.items);
    if (p.deleteRows) return this.#accepted(this.#job.completeDeleteMany, ids, values);
    // A null result is stored as SQL NULL (read back as null all the same), so a batch of
    // handlers that return nothing sends no array: the statement then neither parses one
    // jsonb value per row nor looks each row's position up in $2 (linear in the batch).
    const results = p.items.map((i) => (i.result === undefined || i.result === null ? null : JSON.stringify(i.result)));
    const args = [...values, results.some((r) => r !== null) ? results : null];
    if (this.#recordedBlocks.allKnown(p.items)) return this.#accepted(this.#job.completeManyBlocksKnown, ids, args);
    const accepted = await this.#accepted(this.#job.completeMany, ids, args);
    this.#recordedBlocks.recorded(p.items, accepted);
    return accepted;
  }

  async jobFailMany(p: { items: JobFailItem[]; backoffBaseMs: number; backoffCapMs: number }): Promise<Map<string, JobState>> {
    const rows = await this.#q<{ id: string; state: JobState }>(this.#job.failMany, [
      ...leaseArrays(p.items).values,
      p.items.map((i) => JSON.stringify(i.error)),
      p.backoffBaseMs,
      p.backoffCapMs,
      p.items.map((i) => i.terminal),
    ]);
    return new Map(rows.map((r) => [String(r.id), r.state]));
  }

  jobReleaseMany(p: { leases: Lease[]; refundAttempt: boolean }): Promise<Set<string>> {
    const { ids, values } = leaseArrays(p.leases);
    return this.#accepted(this.#job.releaseMany, ids, [...values, p.refundAttempt]);
  }

  async jobReap(p: { limit: number; graceMs: number; fastReclaim: boolean }): Promise<ReapedJob[]> {
    const rows = await this.#q<{ id: string; state: JobState; queue: string; expired: boolean }>(this.#job.reap, [
      p.limit,
      p.graceMs,
      p.fastReclaim,
    ]);
    return rows.map((r) => ({ id: String(r.id), state: r.state, queue: r.queue, expired: r.expired }));
  }

  jobLeasesOwned(p: { owner: string }): Promise<Array<Lease & { queue: string }>> {
    return this.#q<Lease & { queue: string }>(this.#job.leasesOwned, [p.owner]);
  }

  async jobTokenHighWater(): Promise<bigint> {
    const [row] = await this.#q<{ v: string }>(this.#job.tokenHighWater, []);
    return BigInt(row!.v);
  }

  async jobPurgeScan(p: JobPurgeScanParams): Promise<JobPurgeScanResult> {
    const ages = [p.ages.succeeded, p.ages.cancelled, p.ages.dead_lettered];
    const youngest = Math.min(...ages.filter((a): a is number => a !== null));
    const [r] = await this.#q<{ last: string | null; done: boolean; deleted: JobPurgeScanResult['deleted'] }>(this.#job.purgeScan, [
      p.after,
      p.read,
      ...ages,
      p.epoch,
      Number.isFinite(youngest) ? youngest : 0,
    ]);
    return { last: r?.last ?? null, done: r?.done ?? true, deleted: r?.deleted ?? [] };
  }

  async jobGet(p: { id: string; tenantId?: string | undefined }) {
    const rows =
      p.tenantId === undefined
        ? await this.#q<JobRow>(this.#job.get, [p.id])
        : await this.#q<JobRow>(this.#job.getInTenant, [p.id, p.tenantId]);
    return rows[0] ? rowToJob(rows[0]) : null;
  }

  async jobList(p: JobListParams) {
    // Newest first with no time filter: the partial indexes part by part (job-read.ts), costing
    // what the page costs. In id order otherwise (createdAt is the id order): the primary key
    // within the creation bounds' id range, or the pending jobs by `due` through the claim index.
    // Another sort, or `due` of other states: the newest JOB_SORT_WINDOW matching jobs, sorted
    // (job-list.ts).
    const key = p.sort ?? 'id';
    const order = p.order ?? 'desc';
    const shape = { ...shapeValues(p).shape, state: p.state };
    const values = shapeValues(p).values;
    let rows: JobSummaryRow[];
    if (!isWindowedListing(p) && p.due !== undefined) {
      rows = await this.#q<JobSummaryRow>(this.#jobList.pendingDue[order], [...(await this.#rangeValues(p)), p.due, p.limit, p.offset]);
    } else if (!isWindowedListing(p) && order === 'desc' && !hasCreationBounds(p)) {
      rows = await this.#q<JobSummaryRow>(this.#read.list(shape), [...values, p.limit, p.offset]);
    } else if (!isWindowedListing(p)) {
      rows = await this.#q<JobSummaryRow>(this.#jobList.byId[order], [...(await this.#rangeValues(p)), p.limit, p.offset]);
    } else if (!hasCreationBounds(p)) {
      const over = this.#jobList.windowOver(this.#read.list(shape), values.length + 2, key, order);
      rows = await this.#q<JobSummaryRow>(over, [...values, JOB_SORT_WINDOW, 0, p.due ?? null, p.limit, p.offset]);
    } else {
      rows = await this.#q<JobSummaryRow>(this.#jobList.window[`${key}:${order}`], [
        ...(await this.#rangeValues(p)),
        p.due ?? null,
        p.limit,
        p.offset,
      ]);
    }
    return rows.map(rowToSummary);
  }

  async jobCountCapped(p: Omit<JobListParams, 'offset' | 'limit'> & { cap: number }) {
    // `due` counts within the window its listing sorts (the pending jobs whole); creation bounds
    // count their id range.
    const shape = { ...shapeValues(p).shape, state: p.state };
    const values = shapeValues(p).values;
    let rows: Array<{ n: number }>;
    if (p.due !== undefined && !isWindowedListing(p)) {
      rows = await this.#q<{ n: number }>(this.#jobList.countPendingDue, [...(await this.#rangeValues(p)), p.due, p.cap]);
    } else if (p.due !== undefined && !hasCreationBounds(p)) {
      const over = this.#jobList.countOver(this.#read.list(shape), values.length + 2);
      rows = await this.#q<{ n: number }>(over, [...values, JOB_SORT_WINDOW, 0, p.due]);
    } else if (p.due !== undefined) {
      rows = await this.#q<{ n: number }>(this.#jobList.countWindow, [...(await this.#rangeValues(p)), p.due]);
    } else if (hasCreationBounds(p)) {
      rows = await this.#q<{ n: number }>(this.#jobList.countCapped, [...(await this.#rangeValues(p)), p.cap]);
    } else {
      rows = await this.#q<{ n: number }>(this.#read.countCapped(shape), [...values, p.cap]);
    }
    return Math.min(rows[0]?.n ?? 0, p.cap);
  }

  /** The filters of job-list.ts's `where`: state, tenant, queue, type, creation bounds and their id range. */
  async #rangeValues(p: Omit<JobListParams, 'offset' | 'limit'>): Promise<unknown[]> {
    const idFrom = async (at: Date | undefined, open: string) =>
      at === undefined ? open : ((await this.#q<{ id: string }>(this.#jobList.idFrom, [at]))[0]?.id ?? open);
    const [from, before] = await Promise.all([idFrom(p.createdAfter, ID_RANGE_OPEN.from), idFrom(p.createdBefore, ID_RANGE_OPEN.before)]);
    return [...filterValues(p), p.createdAfter ?? null, p.createdBefore ?? null, from, before];
  }

  async jobRunNow(p: { id: string }) {
    const rows = await this.#q<JobRow>(this.#job.runNow, [p.id]);
    return rows[0] ? rowToJob(rows[0]) : null;
  }

  async queuePause(p: { queue: string }): Promise<Date | null> {
    const rows = await this.#q<{ paused_at: Date }>(this.#queue.pause, [p.queue]);
    return rows[0]?.paused_at ?? null;
  }

  async queueResume(p: { queue: string }): Promise<{ wasPaused: boolean } | null> {
    const rows = await this.#q<{ paused_at: Date | null }>(this.#queue.resume, [p.queue]);
    return rows[0] ? { wasPaused: rows[0].paused_at !== null } : null;
  }

  async queueListPaused(): Promise<PausedQueue[]> {
    const rows = await this.#q<{ queue: string; paused_at: Date }>(this.#queue.listPaused, []);
    return rows.map((r) => ({ queue: r.queue, pausedAt: r.paused_at }));
  }

  async statsSnapshot(p: { windowSeconds: number }): Promise<StatsRow> {
    const [r] = await this.#q<{
      at: Date;
      counts: Array<[string, JobState, number]>;
      paused: Array<[string, string]>;
      scheduled: Array<[string, number]>;
      succeeded: number;
      dead_lettered: number;
      cancelled: number;
      latency_n: number;
      latency_p50: number | null;
      latency_p95: number | null;
      latency_max: number | null;
    }>(this.#stats.snapshot, [p.windowSeconds]);
    if (!r) throw translatePgError(new Error('stats snapshot returned no row'));
    return {
      at: r.at,
      counts: r.counts.map(([queue, state, n]) => ({ queue, state, n })),
      paused: r.paused.map(([queue, at]) => ({ queue, pausedAt: new Date(at) })),
      scheduled: r.scheduled.map(([queue, n]) => ({ queue, n })),
      succeeded: r.succeeded,
      deadLettered: r.dead_lettered,
      cancelled: r.cancelled,
      latency: { count: r.latency_n, p50: r.latency_p50, p95: r.latency_p95, max: r.latency_max },
    };
  }

  async jobReplay(p: { id: string }) {
    const rows = await this.#q<JobRow>(this.#job.replay, [p.id]);
    return rows[0] ? rowToJob(rows[0]) : null;
  }

  async jobCancel(p: { id: string }) {
    const rows = await this.#q<JobRow>(this.#job.cancel, [p.id, cancelChannelFor(this.#schemaName)]);
    return rows[0] ? rowToJob(rows[0]) : null;
  }

  async jobReplayDeadLetters(p: { limit: number; queue?: string | undefined; tenantId?: string | undefined }) {
    const rows = await this.#q<JobSummaryRow>(this.#job.replayDeadLetters, [p.limit, p.queue ?? null, p.tenantId ?? null]);
    return rows.map(rowToSummary).sort((a, b) => compareIds(a.id, b.id));
  }

  async jobDeadTuples() {
    const [r] = await this.#q<{ dead: number; vacuuming: boolean }>(this.#health.jobsDead, []);
    return r ?? { dead: 0, vacuuming: false };
  }

  async jobVacuum() {
    // VACUUM runs outside a transaction block, so the session's timeout is lifted around it.
    const out = await checkOut(this.#pool);
    let ok = false;
    try {
      await this.#q({ text: 'SET statement_timeout = 0' }, [], out.client);
      await this.#q(this.#health.vacuumJobs, [], out.client);
      await this.#q({ text: 'RESET statement_timeout' }, [], out.client);
      ok = true;
    } finally {
      // A session left without its timeout is not handed back.
      out.release(!ok);
    }
  }

  jobCountsByQueue(p: { queue?: string | undefined }) {
    const one = p.queue !== undefined;
    return this.#q<{ queue: string; state: JobState; n: number }>(this.#read.countsByQueue(one), one ? [p.queue] : []);
  }

  async workerSweep(p: { lockNamespace: number }) {
    await this.#q(this.#worker.sweep, [p.lockNamespace]);
  }

  async workerPrune(p: { epoch: string }) {
    await this.#q(this.#worker.prune, [p.epoch]);
  }

  async workerTouch(p: { id: string; inFlight: number }) {
    await this.#q(this.#worker.touch, [p.id, p.inFlight]);
  }

  async healthOldestDue(): Promise<DatabaseHealth['queues']> {
    const rows = await this.#q<{ queue: string; seconds: number; due: number }>(this.#health.oldestDue, []);
    return rows.map((r) => ({ queue: r.queue, oldestDueSeconds: Math.max(0, r.seconds), due: r.due }));
  }

  async healthTableStats(): Promise<DatabaseHealth['tables']> {
    const rows = await this.#q<{
      name: string;
      total_bytes: number;
      table_bytes: number;
      index_bytes: number;
      live_tuples: number;
      dead_tuples: number;
      last_vacuum_epoch: number | null;
      last_analyze_epoch: number | null;
    }>(this.#health.tables, [this.#schemaName]);
    const at = (epoch: number | null) => (epoch === null ? null : new Date(epoch * 1000));
    return rows.map((r) => ({
      name: r.name,
      totalBytes: r.total_bytes,
      tableBytes: r.table_bytes,
      indexBytes: r.index_bytes,
      liveTuples: r.live_tuples,
      deadTuples: r.dead_tuples,
      lastVacuumAt: at(r.last_vacuum_epoch),
      lastAnalyzeAt: at(r.last_analyze_epoch),
    }));
  }

  async healthServerHorizon(): Promise<DatabaseHealth['horizon']> {
    const [r] = await this.#q<{
      session_xmin_age: number | null;
      oldest_xact_seconds: number | null;
      prepared_xmin_age: number | null;
      slot_xmin_age: number | null;
    }>(this.#health.horizon, []);
    return {
      sessionXminAge: r?.session_xmin_age ?? null,
      oldestTransactionSeconds: r?.oldest_xact_seconds ?? null,
      preparedXminAge: r?.prepared_xmin_age ?? null,
      slotXminAge: r?.slot_xmin_age ?? null,
    };
  }

  async workerListLive(): Promise<Array<{ queues: string[]; jobTypes: string[] }>> {
    const rows = await this.#q<{ queues: Record<string, number>; job_types: string[] }>(this.#worker.listLive, []);
    return rows.map((r) => ({ queues: Object.keys(r.queues ?? {}), jobTypes: r.job_types }));
  }

  async workerList(): Promise<WorkerRow[]> {
    const rows = await this.#q<{
      id: string;
      hostname: string;
      pid: number;
      queues: Record<string, number>;
      job_types: string[];
      in_flight: number;
      started_at: Date;
      last_seen_at: Date;
      alive: boolean;
      leader: boolean;
    }>(this.#worker.list, []);
    return rows.map((r) => ({
      id: r.id,
      hostname: r.hostname,
      pid: r.pid,
      queues: r.queues,
      jobTypes: r.job_types,
      inFlight: r.in_flight,
      startedAt: r.started_at,
      lastSeenAt: r.last_seen_at,
      alive: r.alive,
      leader: r.leader,
    }));
  }
}

const BIGINT_LIST = /^\{\d+(?:,\d+)*\}$/;

/**
 * A batch's ids and tokens, and the two as bigint[] parameters ($1, $2). Ids and tokens are
 * decimal strings read from the database, so the literal is built by one join, far cheaper
 * than node-postgres's per-element array escaping; anything else goes as an array, escaped.
 */
function leaseArrays(leases: readonly Lease[]): { ids: string[]; values: [string | string[], string | string[]] } {
  const ids = leases.map((l) => l.id);
  const tokens = leases.map((l) => l.token);
  const idList = `{${ids.join(',')}}`;
  const tokenList = `{${tokens.join(',')}}`;
  const plain = BIGINT_LIST.test(idList) && BIGINT_LIST.test(tokenList);
  return { ids, values: plain ? [idList, tokenList] : [ids, tokens] };
}

function hasCreationBounds(p: Pick<JobListParams, 'createdAfter' | 'createdBefore'>): boolean {
  return p.createdAfter !== undefined || p.createdBefore !== undefined;
}

function filterValues(p: Pick<JobListParams, 'state' | 'tenantId' | 'queue' | 'jobType'>): unknown[] {
  return [p.state ?? null, p.tenantId ?? null, p.queue ?? null, p.jobType ?? null];
}
