// Baton adapter: the library exactly as a user would run it (createBaton with one
// queue), plus the database checks on baton.jobs that every run must pass.

import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { Baton, BatonOptions, createBaton as CreateBaton } from '../../src/index.ts';
import { checkExecutions, JOB_TYPE, type OnJob, type ProducerSide, QUEUE, type Variant, type WorkerSide } from './types.ts';

/**
 * The library under test: this checkout's sources, or the compiled build of another commit
 * when BENCH_BATON_LIB names its entry (bench:ab runs one child per commit that way).
 */
const { createBaton } = (
  process.env.BENCH_BATON_LIB ? await import(pathToFileURL(process.env.BENCH_BATON_LIB).href) : await import('../../src/index.ts')
) as { createBaton: typeof CreateBaton };

export function batonOptions(connectionString: string, v: Variant, extra: Partial<BatonOptions> = {}): BatonOptions {
  const o = v.options as {
    dispatch?: 'notify' | 'poll';
    claimIntoRunning?: boolean;
    concurrency: number;
    poolSize?: number;
    tracing?: boolean;
    deleteOnSuccess?: boolean;
    fairness?: 'tenant' | 'none';
  };
  return {
    connectionString,
    // Only what the variant sets: an unset option is the library's default (bench:ab's 'defaults').
    ...(o.poolSize === undefined ? {} : { poolSize: o.poolSize }),
    ...(o.dispatch === undefined ? {} : { dispatch: o.dispatch }),
    ...(o.claimIntoRunning === undefined ? {} : { claimIntoRunning: o.claimIntoRunning }),
    queues: { [QUEUE]: o.concurrency },
    ...(o.tracing === undefined ? {} : { tracing: o.tracing }),
    ...(o.deleteOnSuccess === undefined ? {} : { deleteOnSuccess: o.deleteOnSuccess }),
    ...(o.fairness === undefined ? {} : { fairness: o.fairness }),
    ...extra,
  };
}

/** Whether the variant deletes succeeded jobs as they complete (their rows are gone, only counted). */
const deletesOnSuccess = (v: Variant) => (v.options as { deleteOnSuccess?: boolean }).deleteOnSuccess === true;

/** Every row succeeded once (attempt 1 unless retries are expected) and matches the handler executions. */
export async function verifyBatonJobs(pool: pg.Pool, executed: readonly number[], total: number, opts: { maxAttempt?: number } = {}) {
  const r = await pool.query<{ seq: number; state: string; attempt: number }>(
    "select (payload->>'seq')::int as seq, state, attempt from baton.jobs where queue = $1",
    [QUEUE],
  );
  const done = new Set(r.rows.filter((x) => x.state === 'succeeded').map((x) => x.seq));
  const maxAttempt = opts.maxAttempt ?? 1;
  const problems: string[] = [];
  if (r.rows.length !== total) problems.push(`${r.rows.length} rows for ${total} enqueued`);
  const over = r.rows.filter((x) => x.state === 'succeeded' && x.attempt > maxAttempt).length;
  if (over) problems.push(`${over} succeeded job(s) took more than ${maxAttempt} attempt(s)`);
  const other = r.rows.filter((x) => x.state !== 'succeeded' && x.state !== 'pending');
  if (other.length) problems.push(`${other.length} job(s) in state ${[...new Set(other.map((x) => x.state))].join('/')}`);
  const mismatch = checkExecutions(executed, done);
  if (mismatch) problems.push(mismatch);
  return { ok: problems.length === 0, done: done.size, remaining: r.rows.length - done.size, detail: problems.join('; ') || 'ok' };
}

/** Rows of the bench queue still in the table (with deleteOnSuccess, every job not yet succeeded). */
async function rowsLeft(pool: pg.Pool): Promise<number> {
  const r = await pool.query<{ n: string }>('select count(*) as n from baton.jobs where queue = $1', [QUEUE]);
  return Number(r.rows[0]!.n);
}

/**
 * With deleteOnSuccess a succeeded job leaves no row (and is not a finished row to count), so:
 * no row of the queue is left, and each seq ran exactly once.
 */
async function verifyDeleted(pool: pg.Pool, executed: readonly number[], total: number) {
  const left = await rowsLeft(pool);
  const problems: string[] = [];
  if (left > 0) problems.push(`${left} row(s) left in the queue`);
  const mismatch = checkExecutions(executed, new Set(Array.from({ length: total }, (_, i) => i)));
  if (mismatch) problems.push(mismatch);
  return { ok: problems.length === 0, done: total - left, remaining: left, detail: problems.join('; ') || 'ok' };
}

export function batonWorker(connectionString: string, v: Variant): WorkerSide {
  let onJob: OnJob = () => undefined;
  const baton: Baton = createBaton({
    ...batonOptions(connectionString, v),
    handlers: { [JOB_TYPE]: (ctx) => onJob((ctx.payload as { seq: number }).seq, ctx.job.attempt) },
  });
  const pool = new pg.Pool({ connectionString, max: 2 });
  pool.on('error', () => undefined);
  let enqueued = 0;
  return {
    async setup() {
      await baton.migrate();
    },
    async enqueueBulk(seqs) {
      enqueued += seqs.length;
      for (let i = 0; i < seqs.length; i += 1000) {
        await baton.enqueueMany(seqs.slice(i, i + 1000).map((seq) => ({ jobType: JOB_TYPE, queue: QUEUE, payload: { seq } })));
      }
    },
    async start(fn) {
      onJob = fn;
      await baton.start();
    },
    async stop() {
      await baton.stop({ drainMs: 5_000 });
    },
    async countDone() {
      if (deletesOnSuccess(v)) return enqueued - (await rowsLeft(pool));
      const r = await pool.query<{ n: string }>("select count(*) as n from baton.jobs where queue = $1 and state = 'succeeded'", [QUEUE]);
      return Number(r.rows[0]!.n);
    },
    verify: (executed, total) => (deletesOnSuccess(v) ? verifyDeleted(pool, executed, total) : verifyBatonJobs(pool, executed, total)),
    async close() {
      await pool.end();
    },
  };
}

export function batonProducer(connectionString: string): ProducerSide {
  // A producer-only engine: no queues, so it never claims.
  const baton = createBaton({ connectionString, poolSize: 4 });
  return {
    async open() {
      await baton.start();
    },
    async enqueue(seq) {
      await baton.enqueue({ jobType: JOB_TYPE, queue: QUEUE, payload: { seq } });
    },
    async close() {
      await baton.stop({ drainMs: 0 });
    },
  };
}
