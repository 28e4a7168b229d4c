// Engine-level test harness: builds engines through the public API (createBaton),
// remembers every one, and after each test opens every gate and stops every engine
// (ending its pool), so nothing outlives its test. Rows are truncated before each test.

import pg from 'pg';
import { afterEach, beforeEach } from 'vitest';
import { type Baton, type BatonOptions, createBaton, type JobContext } from '../../src/index.ts';
import type { TestDatabase } from '../helpers/db.ts';
import { type Deferred, deferred, waitFor } from '../helpers/wait.ts';

export type EngineOptions = BatonOptions;

/**
 * A claim statement: FIFO (job_claim), fair (flow_claim_fair), one-tenant (flow_claim_solo) or
 * that of a queue without other tenants (flow_claim_plain), as a pool sees it.
 */
export const isClaim = (config: { name?: string } | undefined): boolean =>
  typeof config?.name === 'string' && /\.(job_claim|flow_claim_fair|flow_claim_solo|flow_claim_plain)(_[0-9]+)?$/.test(config.name);

/** Stands in for pool.query: `run` sends the statement as the pool would. */
export type QueryHook = (config: { name?: string; values?: unknown[] }, run: () => Promise<pg.QueryResult>) => Promise<pg.QueryResult>;

export interface Observed {
  baton: Baton;
  claimsInFlight: () => number;
  claimsSent: () => number;
  pool: pg.Pool;
}

export interface Engines {
  /** A new engine on the file's database (own pool), not started. */
  create(options?: EngineOptions): Baton;
  /** A new engine, started. */
  start(options?: EngineOptions): Promise<Baton>;
  /** A producer: no queues, its own pool, never started. */
  producer(options?: EngineOptions): Baton;
  /**
   * A started engine on a pool of ours that counts claim statements in flight. With no
   * claim in flight and a long poll, only a wake-up (NOTIFY, in-process) can start one.
   */
  startObserved(options?: EngineOptions): Promise<Observed>;
  /** The same engine, not started. */
  observe(options?: EngineOptions): Observed;
  /**
   * A pool on the file's database (ended after the test, once its engines stopped) whose
   * query() goes through `hook`, as a caller's own pool may: for losing or holding replies.
   */
  pool(hook?: QueryHook): pg.Pool;
  /** A promise a handler can block on; opened after the test at the latest. */
  gate<T = void>(): Deferred<T>;
}

/** Call at the top of a describe. `defaults` are merged under each engine's options. */
export function useEngines(db: TestDatabase, defaults: () => EngineOptions = () => ({})): Engines {
  const engines: Baton[] = [];
  const pools: pg.Pool[] = [];
  const gates: Array<Deferred<any>> = [];

  beforeEach(async () => {
    await db.query('TRUNCATE baton.jobs, baton.workers, baton.finished_counts, baton.paused_queues');
  });

  afterEach(async () => {
    for (const g of gates.splice(0)) if (!g.settled) g.resolve(undefined);
    await Promise.all(engines.splice(0).map((e) => e.stop({ drainMs: 5_000 })));
    await Promise.all(pools.splice(0).map((p) => p.end()));
  });

  const create = (options: EngineOptions = {}): Baton => {
    const engine = createBaton({ connectionString: db.url, poolSize: 3, ...defaults(), ...options });
    engines.push(engine);
    return engine;
  };

  // A pool of ours whose claim statements are counted; the engine issues its claim
  // synchronously from wake(), so the count is never behind.
  const hookedPool = (hook: QueryHook = (_, run) => run(), max = 3): pg.Pool => {
    const pool = new pg.Pool({ connectionString: db.url, max, application_name: 'baton' });
    pool.on('error', () => undefined);
    pools.push(pool);
    const query = pool.query.bind(pool) as (config: unknown) => Promise<pg.QueryResult>;
    (pool as unknown as { query: unknown }).query = (config: { name?: string; values?: unknown[] }) => hook(config, () => query(config));
    return pool;
  };

  const observe = (options: EngineOptions = {}): Observed => {
    let claims = 0;
    let sent = 0;
    const pool = hookedPool((config, run) => {
      if (!isClaim(config)) return run();
      claims++;
      sent++;
      return run().finally(() => claims--);
    });
    const baton = create({ ...options, pool });
    return { baton, claimsInFlight: () => claims, claimsSent: () => sent, pool };
  };

  return {
    create,
    start: async (options) => {
      const engine = create(options);
      await engine.start();
      return engine;
    },
    observe,
    pool: (hook) => hookedPool(hook, 4),
    startObserved: async (options = {}) => {
      const observed = observe(options);
      await observed.baton.start();
      return observed;
    },
    producer: (options = {}) => create({ poolSize: 2, ...options, queues: {} }),
    gate: <T>() => {
      const g = deferred<T>();
      gates.push(g);
      return g;
    },
  };
}

/** Counts handler invocations per job id (to prove nothing ran twice). */
export class Invocations {
  readonly byJob = new Map<string, number>();
  total = 0;

  record(ctx: JobContext): void {
    this.total++;
    this.byJob.set(ctx.job.id, (this.byJob.get(ctx.job.id) ?? 0) + 1);
  }

  of(id: string): number {
    return this.byJob.get(id) ?? 0;
  }

  /** Job ids that ran more than once. */
  duplicates(): string[] {
    return [...this.byJob].filter(([, n]) => n > 1).map(([id]) => id);
  }
}

/** The parts of a jobs row engine tests assert on. */
export interface JobRowView {
  id: string;
  state: string;
  attempt: number;
  max_attempts: number;
  lease_token: string | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  dead_letter_reason: string | null;
  result: unknown;
  errors: Array<{ kind: string; attempt: number; token: string; message: string; name: string }>;
  started_at: Date | null;
  finished_at: Date | null;
  updated_at: Date;
}

export async function row(db: TestDatabase, id: string): Promise<JobRowView> {
  const r = await db.query<JobRowView>(
    `SELECT id::text, state, attempt, max_attempts, lease_token::text, lease_owner, lease_expires_at,
            dead_letter_reason, result, errors, started_at, finished_at, updated_at
       FROM baton.jobs WHERE id = $1`,
    [id],
  );
  if (!r.rows[0]) throw new Error(`job ${id} does not exist`);
  return r.rows[0];
}

/** Waits (polling the database, with a deadline) until job `id` is in `state`; returns the row. */
export function rowInState(db: TestDatabase, id: string, state: string, timeoutMs = 10_000): Promise<JobRowView> {
  return waitFor(
    async () => {
      const r = await row(db, id);
      return r.state === state ? r : null;
    },
    { timeoutMs, message: `job ${id} to be ${state}` },
  );
}
