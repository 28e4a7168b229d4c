// Micro-benchmarks (tinybench) of the hot statements through the engine's own executor
// (src/db/pg/pg-executor.ts): claim at batch 1/10/50, complete single vs batched,
// enqueue single vs batch. Each runs on its own fresh database with rows pre-made in SQL.

import pg from 'pg';
import { Bench } from 'tinybench';
import { migrate } from '../src/db/migrate.ts';
import { PgExecutor } from '../src/db/pg/pg-executor.ts';
import type { NewJob } from '../src/driver/executor.ts';
import { quoteSchema } from '../src/driver/schema-name.ts';
import { type Ctx, withDatabase } from './scenarios/context.ts';
import { JOB_TYPE, QUEUE } from './systems/types.ts';

export interface MicroResult {
  name: string;
  batch: number;
  opsPerSec: number;
  rowsPerSec: number;
  meanMs: number;
  p99Ms: number;
  samples: number;
}

function newJob(seq: number): NewJob {
  return {
    tenantId: 'default',
    queue: QUEUE,
    jobType: JOB_TYPE,
    payload: { seq },
    traceContext: null,
    priority: 0,
    runAt: null,
    delayMs: null,
    maxAttempts: 5,
    idempotencyKey: null,
  };
}

async function one(
  ctx: Ctx,
  name: string,
  batch: number,
  prepare: (pool: pg.Pool) => Promise<void>,
  op: (ex: PgExecutor) => () => Promise<unknown>,
): Promise<MicroResult> {
  return withDatabase(ctx, `micro_${name}`, async (url) => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => undefined);
    try {
      await migrate(pool, { schema: 'baton' });
      await prepare(pool);
      await pool.query('VACUUM ANALYZE baton.jobs');
      const ex = new PgExecutor(pool, quoteSchema('baton'));
      const time = ctx.args.quick ? 150 : 1_500;
      const bench = new Bench({ time, warmupTime: ctx.args.quick ? 30 : 300, throws: true });
      bench.add(name, op(ex));
      await bench.run();
      const r = bench.tasks[0]!.result;
      if (r.state !== 'completed') throw new Error(`${name}: ${r.state}`);
      return {
        name,
        batch,
        opsPerSec: r.throughput.mean,
        rowsPerSec: r.throughput.mean * batch,
        meanMs: r.latency.mean,
        p99Ms: r.latency.p99,
        samples: r.latency.samplesCount,
      };
    } finally {
      await pool.end();
    }
  });
}

/** Rows in 'pending' for claims. Sized for the longest run at a generous rate. */
async function pending(pool: pg.Pool, n: number): Promise<void> {
  await pool.query(
    `INSERT INTO baton.jobs (queue, job_type, payload) SELECT $1, $2, jsonb_build_object('seq', g) FROM generate_series(1, $3::int) g`,
    [QUEUE, JOB_TYPE, n],
  );
}

/** Rows already running under a lease, to be completed; returns their (id, token) in order. */
async function running(pool: pg.Pool, n: number): Promise<Array<{ id: string; token: string }>> {
  await pool.query(
    `INSERT INTO baton.jobs (queue, job_type, payload, state, attempt, lease_token, lease_owner, lease_expires_at, started_at)
     SELECT $1, $2, jsonb_build_object('seq', g), 'running', 1, nextval('baton.lease_token_seq'), 'micro', now() + interval '1 hour', now()
     FROM generate_series(1, $3::int) g`,
    [QUEUE, JOB_TYPE, n],
  );
  const r = await pool.query<{ id: string; token: string }>(
    `SELECT id::text AS id, lease_token::text AS token FROM baton.jobs WHERE state = 'running' ORDER BY id`,
  );
  return r.rows;
}

export async function microBenchmarks(ctx: Ctx): Promise<MicroResult[]> {
  const rows = ctx.args.quick ? 10_000 : 200_000;
  const out: MicroResult[] = [];
  const progress = (s: string) => ctx.progress.update(`micro-benchmark ${s}`);
  for (const batch of [1, 10, 50]) {
    progress(`claim batch ${batch}`);
    out.push(
      await one(
        ctx,
        `claim (into running)`,
        batch,
        (pool) => pending(pool, rows),
        (ex) => async () => {
          const got = await ex.jobClaim({ queue: QUEUE, limit: batch, owner: 'micro', leaseMs: 60_000, intoRunning: true });
          if (got.length !== batch) throw new Error(`claim returned ${got.length} of ${batch}: provision more rows`);
        },
      ),
    );
  }
  for (const batch of [1, 50]) {
    progress(`complete batch ${batch}`);
    let leases: Array<{ id: string; token: string }> = [];
    out.push(
      await one(
        ctx,
        batch === 1 ? 'complete (single)' : 'complete (batched)',
        batch,
        async (pool) => {
          leases = await running(pool, rows);
        },
        (ex) => async () => {
          const items = leases.splice(0, batch).map((l) => ({ ...l, result: null }));
          if (items.length !== batch) throw new Error('complete: out of leased rows: provision more');
          const ok = await ex.jobCompleteMany({ items });
          if (ok.size !== batch) throw new Error(`complete wrote ${ok.size} of ${batch}`);
        },
      ),
    );
  }
  for (const batch of [1, 50]) {
    progress(`enqueue batch ${batch}`);
    let seq = 0;
    out.push(
      await one(
        ctx,
        batch === 1 ? 'enqueue (single)' : 'enqueue (batch)',
        batch,
        async () => undefined,
        (ex) => async () => {
          await ex.jobInsertMany({ jobs: Array.from({ length: batch }, () => newJob(seq++)) });
        },
      ),
    );
  }
  return out;
}
