// Writes jobs and workers rows directly, in any state, so a test can start from the exact
// situation it examines. Defaults satisfy the table's CHECK constraints (see
// migrations/0001_create_jobs.sql); explicit values are written as given, so a
// test can also provoke a constraint violation on purpose.

import { quoteSchema } from '../../src/driver/schema-name.ts';
import { JOB_STATES, type JobState } from '../../src/types/job.ts';

/** Anything with pg's `query(text, values)`: a pg.Pool, pg.PoolClient or pg.Client. */
export interface SqlRunner {
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

/** An absolute time, or an offset in ms from the database's now() (database time only). */
export type TimeInput = Date | string | { inMs: number };

export interface InsertJobOptions {
  schema?: string;
  state?: JobState;
  tenantId?: string;
  queue?: string;
  jobType?: string;
  payload?: unknown;
  priority?: number;
  /** Default: now(). */
  runAt?: TimeInput;
  /** Default 0 for pending/cancelled, 1 otherwise (a claim bumps attempt). */
  attempt?: number;
  maxAttempts?: number;
  /** 'next' draws from lease_token_seq. Default 'next' for leased/running, null otherwise. */
  leaseToken?: bigint | number | string | 'next' | null;
  /** Default 'test-worker' for leased/running, null otherwise. */
  leaseOwner?: string | null;
  /** Default 30 s after now() for leased/running, null otherwise. */
  leaseExpiresAt?: TimeInput | null;
  idempotencyKey?: string | null;
  lastError?: unknown;
  errors?: unknown[];
  /** Default 'test' for dead_lettered, null otherwise. */
  deadLetterReason?: string | null;
  result?: unknown;
  replayCount?: number;
  createdAt?: TimeInput;
  /** Default now() for running and terminal states except cancelled. */
  startedAt?: TimeInput | null;
  /** Default now() for terminal states. */
  finishedAt?: TimeInput | null;
  updatedAt?: TimeInput;
}

const LIVE: readonly JobState[] = ['leased', 'running'];
const TERMINAL: readonly JobState[] = ['succeeded', 'dead_lettered', 'cancelled'];
const NOW = { inMs: 0 } as const;

const statements = new Map<string, string>();

/** A time column's value from parameters ($i absolute, $i+1 ms from now()); both null leaves it NULL. */
const timeSql = (i: number) => `COALESCE($${i}::timestamptz, now() + $${i + 1}::float8 * interval '1 millisecond')`;

function insertSql(schema: string): string {
  let sql = statements.get(schema);
  if (sql) return sql;
  const s = quoteSchema(schema);
  const t = timeSql;
  sql = `INSERT INTO ${s}.jobs (
      tenant_id, queue, job_type, payload, priority, state, run_at, attempt, max_attempts,
      lease_token, lease_owner, lease_expires_at, idempotency_key, last_error, errors,
      dead_letter_reason, result, replay_count, created_at, started_at, finished_at, updated_at)
    VALUES ($1, $2, $3, $4::jsonb, $5, $6, ${t(7)}, $9, $10,
      CASE WHEN $11::boolean THEN nextval('${s}.lease_token_seq') ELSE $12::bigint END,
      $13, ${t(14)}, $16, $17::jsonb, $18::jsonb, $19, $20::jsonb, $21,
      ${t(22)}, ${t(24)}, ${t(26)}, ${t(28)})
    RETURNING id::text AS id`;
  statements.set(schema, sql);
  return sql;
}

function time(v: TimeInput | null | undefined): [Date | string | null, number | null] {
  if (v === null || v === undefined) return [null, null];
  if (v instanceof Date || typeof v === 'string') return [v, null];
  return [null, v.inMs];
}

const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));

/** Inserts one job row and returns its id (bigint as a decimal string). */
export async function insertJob(db: SqlRunner, options: InsertJobOptions = {}): Promise<string> {
  const state = options.state ?? 'pending';
  if (!JOB_STATES.includes(state)) throw new Error(`insertJob: unknown state ${JSON.stringify(state)}`);
  const live = LIVE.includes(state);
  const terminal = TERMINAL.includes(state);
  const token = options.leaseToken === undefined ? (live ? 'next' : null) : options.leaseToken;
  const pick = <T>(v: T | undefined, dflt: T): T => (v === undefined ? dflt : v);
  const values = [
    options.tenantId ?? 'default',
    options.queue ?? 'default',
    options.jobType ?? 'test.noop',
    JSON.stringify(options.payload ?? {}),
    options.priority ?? 0,
    state,
    ...time(options.runAt ?? NOW),
    options.attempt ?? (state === 'pending' || state === 'cancelled' ? 0 : 1),
    options.maxAttempts ?? 5,
    token === 'next',
    token === 'next' || token === null ? null : String(token),
    pick(options.leaseOwner, live ? 'test-worker' : null),
    ...time(pick(options.leaseExpiresAt, live ? { inMs: 30_000 } : null)),
    options.idempotencyKey ?? null,
    json(options.lastError),
    JSON.stringify(options.errors ?? []),
    pick(options.deadLetterReason, state === 'dead_lettered' ? 'test' : null),
    json(options.result),
    options.replayCount ?? 0,
    ...time(options.createdAt ?? NOW),
    ...time(pick(options.startedAt, state === 'running' || (terminal && state !== 'cancelled') ? NOW : null)),
    ...time(pick(options.finishedAt, terminal ? NOW : null)),
    ...time(options.updatedAt ?? NOW),
  ];
  const res = await db.query(insertSql(options.schema ?? 'baton'), values);
  return res.rows[0].id as string;
}

/** Inserts `count` jobs; `options` may depend on the index. Returns ids in insert order. */
export async function insertJobs(
  db: SqlRunner,
  count: number,
  options: InsertJobOptions | ((i: number) => InsertJobOptions) = {},
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await insertJob(db, typeof options === 'function' ? options(i) : options));
  return ids;
}

/** The raw jobs row (snake_case columns, bigints as strings) for assertions, or undefined. */
export async function jobRow(db: SqlRunner, id: string | number | bigint, schema = 'baton'): Promise<Record<string, any> | undefined> {
  const res = await db.query(`SELECT * FROM ${quoteSchema(schema)}.jobs WHERE id = $1`, [String(id)]);
  return res.rows[0];
}

export interface InsertWorkerOptions {
  schema?: string;
  /** The presence lock's key (second half of the advisory lock). Default 0. */
  lockKey?: number;
  hostname?: string;
  pid?: number;
  /** queue -> concurrency. Default {}. */
  queues?: Record<string, number>;
  /** Job types it has handlers for. Default []. */
  jobTypes?: string[];
  inFlight?: number;
  /** Default now(). */
  startedAt?: TimeInput;
  /** Default now(). */
  lastSeenAt?: TimeInput;
  /** Default null: not seen gone. */
  goneSince?: TimeInput | null;
  /** Default null: not the leader. */
  leaderSince?: TimeInput | null;
}

/** Inserts one workers row as presence would, with any times (database clock for offsets). */
export async function insertWorker(db: SqlRunner, id: string, options: InsertWorkerOptions = {}): Promise<void> {
  const t = timeSql;
  await db.query(
    `INSERT INTO ${quoteSchema(options.schema ?? 'baton')}.workers
       (id, lock_key, hostname, pid, queues, in_flight, started_at, last_seen_at, gone_since, job_types, leader_since)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, ${t(7)}, ${t(9)}, ${t(11)}, $13::text[], ${t(14)})`,
    [
      id,
      options.lockKey ?? 0,
      options.hostname ?? 'test-host',
      options.pid ?? 1,
      JSON.stringify(options.queues ?? {}),
      options.inFlight ?? 0,
      ...time(options.startedAt ?? NOW),
      ...time(options.lastSeenAt ?? NOW),
      ...time(options.goneSince ?? null),
      options.jobTypes ?? [],
      ...time(options.leaderSince ?? null),
    ],
  );
}

/** The raw workers row (snake_case columns) for assertions, or undefined. */
export async function workerRow(db: SqlRunner, id: string, schema = 'baton'): Promise<Record<string, any> | undefined> {
  const res = await db.query(`SELECT * FROM ${quoteSchema(schema)}.workers WHERE id = $1`, [id]);
  return res.rows[0];
}
