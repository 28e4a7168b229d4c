// A chaos worker: one child process running the real engine on queue `chaos`.
// It appends to its own JSONL history: 'start' before each handler run, 'end'
// after, and every outcome / heartbeat write with the rows it changed (read
// from the statement's RETURNING set by wrapping pg's Client.query, so the
// engine itself is untouched). Configured by environment (see WorkerEnv).

import pg from 'pg';
import { CANCEL_REQUESTED, TOKEN_FENCE } from '../../src/db/pg/queries/job.ts';
import type { JobContext } from '../../src/index.ts';
import { createBaton, JobCancelledError } from '../../src/index.ts';
import { errorRecord, HistoryLog, type WriteRecord } from './history.ts';
import { leaderKind, leaderRecord } from './leader-recorder.ts';
import { CHAOS_PARALLEL_WORKFLOW, CHAOS_WORKFLOW, chaosParallelWorkflow, chaosWorkflow } from './workflow-definition.ts';
import { writeKind, writeRecords } from './write-recorder.ts';

/** Environment the runner passes. */
export interface WorkerEnv {
  CHAOS_DB_URL: string;
  /** The slot's name: the engine's worker id too, unless CHAOS_GENERATED_ID is set. */
  CHAOS_WORKER_ID: string;
  /** '1': let the engine generate its worker id (it then claims before its presence lock is first held). */
  CHAOS_GENERATED_ID?: string;
  CHAOS_LOG: string;
  CHAOS_CONCURRENCY?: string;
  CHAOS_LEASE_MS?: string;
  CHAOS_QUERY_TIMEOUT_MS?: string;
  /**
   * 'unfenced-complete': strip the token condition from the complete statement; 'cancel-retry':
   * retry a failed job whatever its cancel request (the runner drops the table's CHECK). Each
   * proves the suite can fail.
   */
  CHAOS_MUTATE?: string;
  /** The leader scenario (leader.ts): the leader lease, and retention of succeeded jobs (ms) and its period. */
  CHAOS_LEADER_LEASE_MS?: string;
  CHAOS_RETENTION_MS?: string;
  CHAOS_RETENTION_INTERVAL_MS?: string;
}

const env = process.env as unknown as WorkerEnv;
const workerId = env.CHAOS_WORKER_ID;
const log = new HistoryLog(env.CHAOS_LOG);
const MUTATE = process.env.CHAOS_MUTATE;

// ---- write recorder -------------------------------------------------------
// The engine's lease writes, recognised and read by write-recorder.ts.
function record(
  kind: WriteRecord['kind'],
  config: { values?: unknown[] },
  sentAt: number,
  res: pg.QueryResult | undefined,
  err: unknown,
): void {
  for (const r of writeRecords(kind, config, res, err, { worker: workerId, sentAt, at: Date.now() })) {
    log.append(r);
    if (OUTCOME_WRITES.has(r.kind) && r.rowsAffected !== null) unsettled.delete(r.jobId);
  }
}

/**
 * Jobs this worker started whose outcome is not yet answered (handler running or its write in
 * flight): what a stall of this process hits. A handler aborted on lease loss writes nothing.
 */
const unsettled = new Set<string>();
const OUTCOME_WRITES = new Set<WriteRecord['kind']>(['complete', 'fail', 'release']);

// ---- pause after reading due schedules -------------------------------------------
// The leader scenario asks this process (IPC 'pause-after-due') to stop itself (SIGSTOP) the
// next time its ticker has read due schedules, before it fires them: on SIGCONT the tick goes on
// with what it read before the pause, as a process stopped at that moment by anyone would.
let pauseAfterDue = false;
const isDueRead = (config: unknown) =>
  ((config as { name?: unknown } | null)?.name as string | undefined)?.endsWith('.schedule_due') ?? false;
function stopsHere(config: unknown, err: unknown, res: pg.QueryResult | undefined): boolean {
  if (!pauseAfterDue || err || !res || res.rows.length === 0 || !isDueRead(config)) return false;
  pauseAfterDue = false;
  return true;
}
function selfStop(then: () => void): void {
  process.send?.({ type: 'self-stopping', at: Date.now() }, () => {
    process.kill(process.pid, 'SIGSTOP');
    then();
  });
}

type QueryFn = (this: pg.Client, ...args: unknown[]) => unknown;
const original = pg.Client.prototype.query as unknown as QueryFn;
(pg.Client.prototype as unknown as { query: QueryFn }).query = function (this: pg.Client, ...args: unknown[]) {
  const leader = leaderKind(args[0]);
  if (leader || (pauseAfterDue && isDueRead(args[0]))) return observed(this, args, leader);
  const kind = writeKind(args[0]);
  if (!kind) return original.apply(this, args);
  let config = args[0] as { name?: string; text?: string; values?: unknown[] };
  if (MUTATE === 'unfenced-complete' && kind === 'complete' && config.text) {
    // The deliberate bug: the outcome write without its token condition. The suite must fail.
    if (!config.text.includes(TOKEN_FENCE)) throw new Error('unfenced-complete: the complete statement no longer has its token fence');
    config = { ...config, text: config.text.replace(TOKEN_FENCE, '') };
    args[0] = config;
  }
  if (MUTATE === 'cancel-retry' && kind === 'fail' && config.text) {
    // The deliberate bug: a failed attempt retried although its job has a cancel request.
    if (!config.text.includes(CANCEL_REQUESTED)) throw new Error('cancel-retry: the fail statement no longer reads the cancel request');
    config = { ...config, text: config.text.replaceAll(CANCEL_REQUESTED, 'false') };
    args[0] = config;
  }
  const sentAt = Date.now();
  const cbIndex = args.findIndex((a) => typeof a === 'function');
  if (cbIndex >= 0) {
    // pg.Pool calls client.query(config, values, callback).
    const cb = args[cbIndex] as (err: unknown, res: pg.QueryResult | undefined) => void;
    args[cbIndex] = (err: unknown, res: pg.QueryResult | undefined) => {
      record(kind, config, sentAt, err ? undefined : res, err);
      cb(err, res);
    };
    return original.apply(this, args);
  }
  return (original.apply(this, args) as Promise<pg.QueryResult>).then(
    (res) => {
      record(kind, config, sentAt, res, undefined);
      return res;
    },
    (err: unknown) => {
      record(kind, config, sentAt, undefined, err);
      throw err;
    },
  );
};

/** A leader statement (recorded), or the due read the scenario stops after. */
function observed(client: pg.Client, args: unknown[], kind: ReturnType<typeof leaderKind>): unknown {
  const config = args[0] as { values?: unknown[] };
  const sentAt = Date.now();
  const settle = (err: unknown, res: pg.QueryResult | undefined) => {
    if (kind) log.append(leaderRecord(kind, config, res, err, { worker: workerId, sentAt, at: Date.now() }));
  };
  const cbIndex = args.findIndex((a) => typeof a === 'function');
  if (cbIndex >= 0) {
    const cb = args[cbIndex] as (err: unknown, res: pg.QueryResult | undefined) => void;
    args[cbIndex] = (err: unknown, res: pg.QueryResult | undefined) => {
      settle(err, res);
      if (stopsHere(args[0], err, res)) selfStop(() => cb(err, res));
      else cb(err, res);
    };
    return original.apply(client, args);
  }
  return (original.apply(client, args) as Promise<pg.QueryResult>).then(
    (res) => {
      settle(undefined, res);
      return stopsHere(args[0], undefined, res) ? new Promise<pg.QueryResult>((r) => selfStop(() => r(res))) : res;
    },
    (err: unknown) => {
      settle(err, undefined);
      throw err;
    },
  );
}

// ---- pool starvation ----------------------------------------------------------
// The engine builds its own hardened pg.Pool (create-baton.ts); a subclass recorded here
// lets the 'starve' fault take every one of its connections without touching the engine.
const enginePools: pg.Pool[] = [];
const OriginalPool = pg.Pool;
(pg as unknown as { Pool: typeof pg.Pool }).Pool = class RecordedPool extends OriginalPool {
  constructor(config?: pg.PoolConfig) {
    super(config);
    enginePools.push(this);
  }
} as typeof pg.Pool;

/** Holds every connection of the engine's pool in an idle transaction for `ms`. */
async function starve(ms: number): Promise<{ held: number; max: number }> {
  const pool = enginePools.at(-1);
  if (!pool) return { held: 0, max: 0 };
  const until = Date.now() + ms;
  const max = (pool as unknown as { options: { max: number } }).options.max;
  const got = await Promise.allSettled(Array.from({ length: max }, () => pool.connect()));
  const clients = got.flatMap((g) => (g.status === 'fulfilled' ? [g.value] : []));
  // A checked-out client has no pool error listener: a reset or a PostgreSQL restart while we
  // hold it would otherwise crash this worker with an unhandled 'error' event.
  for (const c of clients) c.on('error', () => undefined);
  const open = await Promise.all(
    clients.map((c) =>
      c.query('BEGIN').then(
        () =>
          c.query('SELECT 1').then(
            () => true,
            () => false,
          ),
        () => false,
      ),
    ),
  );
  await new Promise((r) => setTimeout(r, Math.max(0, until - Date.now())));
  await Promise.all(
    clients.map(async (c, i) => {
      const ok =
        open[i] &&
        (await c.query('ROLLBACK').then(
          () => true,
          () => false,
        ));
      c.release(ok ? undefined : new Error('starvation connection unusable'));
    }),
  );
  return { held: open.filter(Boolean).length, max };
}

process.on('message', (m: { type?: string }) => {
  if (m?.type === 'pause-after-due') pauseAfterDue = true;
});

process.on('message', (m: { type?: string; ms?: number }) => {
  if (m?.type !== 'starve') return;
  void starve(m.ms ?? 10_000).then(
    (r) => process.send?.({ type: 'starved', ...r }),
    () => process.send?.({ type: 'starved', held: 0, max: 0 }),
  );
});

// ---- the handler ------------------------------------------------------------
interface ChaosPayload {
  /** Work time in ms. */
  ms: number;
  /** Throw a transient error on the first attempt (exercises the fenced fail path). */
  failFirst?: boolean;
  /** Finish anyway when asked to stop (a cancel request); a lost lease still stops it. */
  ignoreCancel?: boolean;
  /** The debounce scenario's enqueue number of its key (debounce.ts). */
  seq?: number;
}

async function chaosHandler(ctx: JobContext<ChaosPayload>): Promise<unknown> {
  const { jobId, token } = { jobId: ctx.job.id, token: ctx.token };
  const cron = ctx.job.idempotencyKey?.startsWith('cron:')
    ? { key: ctx.job.idempotencyKey, runAt: ctx.job.runAt.getTime(), createdAt: ctx.job.createdAt.getTime() }
    : {};
  log.append({ type: 'start', jobId, token, worker: workerId, at: Date.now(), ...cron });
  unsettled.add(jobId);
  const cancelled = () => ctx.signal.reason instanceof JobCancelledError;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, ctx.payload.ms);
      ctx.signal.addEventListener(
        'abort',
        () => {
          // Asked to stop: this job finishes anyway (its lease is still held).
          if (cancelled() && ctx.payload.ignoreCancel) return;
          clearTimeout(timer);
          reject(ctx.signal.reason ?? new Error('aborted'));
        },
        { once: true },
      );
    });
    if (ctx.payload.failFirst && ctx.job.attempt === 1) throw new Error('chaos: planned transient failure');
  } catch (err) {
    const outcome = !ctx.signal.aborted ? 'error' : cancelled() ? 'cancelled' : 'aborted';
    log.append({ type: 'end', jobId, token, worker: workerId, at: Date.now(), outcome });
    // A handler aborted on lease loss writes nothing; one that stopped on a cancel writes its failure.
    if (outcome === 'aborted') unsettled.delete(jobId);
    throw err;
  }
  log.append({ type: 'end', jobId, token, worker: workerId, at: Date.now(), outcome: 'ok' });
  // The token in the result lets the checker prove, from the table alone, which lease wrote it.
  // The debounce scenario's payloads carry a seq: the checker reads which one ran.
  return { token, worker: workerId, ...(ctx.payload.seq !== undefined ? { seq: ctx.payload.seq } : {}) };
}

const leaseMs = Number(env.CHAOS_LEASE_MS ?? 2_000);

// ---- stall monitor --------------------------------------------------------------
// A process the host does not run cannot renew its leases, just as under SIGSTOP: its jobs
// may expire and run elsewhere. When this timer fires STALL_MS or more late, the stall is
// recorded as a fault of this worker (the checker credits the jobs it hit; a 'pause' of ours
// is not counted twice). Half the lease: a shorter stall leaves time for a heartbeat.
const STALL_TICK_MS = 100;
const STALL_MS = Math.floor(leaseMs / 2);
let lastTick = Date.now();
setInterval(() => {
  const now = Date.now();
  const late = now - lastTick - STALL_TICK_MS;
  lastTick = now;
  if (late >= STALL_MS)
    log.append({ type: 'fault', kind: 'stall', worker: workerId, at: now - late, until: now, inFlight: [...unsettled] });
}, STALL_TICK_MS).unref();

// ---- main -----------------------------------------------------------------------
const makeBaton = () => {
  const b = createBaton({
    connectionString: env.CHAOS_DB_URL,
    ...(env.CHAOS_GENERATED_ID === '1' ? {} : { workerId }),
    queues: { chaos: Number(env.CHAOS_CONCURRENCY ?? 4) },
    leaseMs,
    heartbeatMs: Math.floor(leaseMs / 4),
    pollIntervalMs: 500,
    reaperIntervalMs: 250,
    backoffBaseMs: 100,
    backoffCapMs: 1_000,
    poolSize: 6,
    // The cron scenario (cron.ts) pauses the leader past a short threshold to make misfires.
    ...(process.env.CHAOS_CRON_MISFIRE_MS ? { cronMisfireThresholdMs: Number(process.env.CHAOS_CRON_MISFIRE_MS) } : {}),
    // The leader scenario (leader.ts): its lease, and retention deleting succeeded jobs at once.
    ...(env.CHAOS_LEADER_LEASE_MS ? { leaderLeaseMs: Number(env.CHAOS_LEADER_LEASE_MS) } : {}),
    ...(env.CHAOS_RETENTION_MS
      ? {
          retention: { succeededMs: Number(env.CHAOS_RETENTION_MS), cancelledMs: null, deadLetteredMs: null },
          retentionIntervalMs: Number(env.CHAOS_RETENTION_INTERVAL_MS ?? 200),
        }
      : {}),
    queryTimeoutMs: Number(env.CHAOS_QUERY_TIMEOUT_MS ?? 2_000),
    handlers: { chaos: chaosHandler as (ctx: JobContext) => Promise<unknown> },
  });
  // The workflow scenarios' workflows (workflow.ts); idle in the others.
  b.workflow(
    CHAOS_WORKFLOW,
    chaosWorkflow(workerId, (r) => log.append(r)),
    { queue: 'chaos', maxAttempts: 100 },
  );
  b.workflow(
    CHAOS_PARALLEL_WORKFLOW,
    chaosParallelWorkflow(workerId, (r) => log.append(r)),
    { queue: 'chaos', maxAttempts: 100 },
  );
  // Every background error, for the checker's count of errors with no fault active.
  b.events.on('error', (e) => log.append(errorRecord(workerId, e)));
  b.events.on('leadership', (e) => log.append({ type: 'leadership', worker: workerId, leader: e.leader, at: Date.now() }));
  return b;
};

// start() rejects while the database is unreachable (e.g. a replacement worker spawned into a
// blackhole); like a process supervisor, try again with a fresh instance.
let baton = makeBaton();
for (let attempt = 0; ; attempt++) {
  try {
    await baton.start();
    break;
  } catch (err) {
    log.append(errorRecord(workerId, { where: 'start', error: err }));
    process.stderr.write(`chaos worker ${workerId}: start failed (${(err as Error).message}); retrying\n`);
    await baton.stop({ drainMs: 0 }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** attempt)));
    baton = makeBaton();
  }
}
let aborted = 0;
baton.events.on('leaseLost', () => {
  aborted++;
});

process.on('SIGTERM', () => {
  baton
    .stop({ drainMs: 3_000 })
    .catch(() => undefined)
    .finally(() => {
      process.send?.({ type: 'stopped', aborted, stats: baton.stats() });
      process.exit(0);
    });
});

// The runner is gone (even SIGKILLed): never outlive it.
process.on('disconnect', () => process.exit(1));

process.send?.({ type: 'ready', workerId, leaseOwner: baton.config.workerId });
