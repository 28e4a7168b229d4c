// Per-file databases. Every test file gets its own database, cloned from the
// run's migrated template (schema `baton`), so files run in parallel without
// seeing each other's rows. Each database is dropped WITH (FORCE) when done.

import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { migrate } from '../../src/db/migrate.ts';
import type { TestPgInfo } from './global-setup.ts';
import { createDatabase, databaseUrl, dropDatabase } from './pg-admin.ts';

export interface TestDatabase {
  /** Database name (unique per run and file). */
  readonly name: string;
  /** Connection URL for this database (hand it to createBaton / pg.Pool / child processes). */
  readonly url: string;
  /** Schema the Baton tables live in. */
  readonly schema: string;
  /** A pool on this database, ended when the database is dropped. */
  readonly pool: pg.Pool;
  query<R extends pg.QueryResultRow = any>(sql: string, params?: unknown[]): Promise<pg.QueryResult<R>>;
  /** Ends the pool and drops the database. Idempotent. */
  drop(): Promise<void>;
}

export interface CreateDatabaseOptions {
  /**
   * 'template' (default): clone of the migrated template, schema `baton`.
   * 'empty': a fresh database from template0 with nothing in it.
   * { schema }: a fresh database migrated by migrate() into that schema.
   */
  from?: 'template' | 'empty' | { schema: string };
  /** Max connections of the pool. Default 10. */
  poolSize?: number;
}

/** Server info the global setup provided (admin URL, template name, run prefix). */
export function testPg(): TestPgInfo {
  return inject('batonPg');
}

let counter = 0;
const POOL_END_GRACE_MS = 5_000;

/** Creates a database for this test file. Call drop() when done (useTestDatabase does). */
export async function createTestDatabase(options: CreateDatabaseOptions = {}): Promise<TestDatabase> {
  const info = testPg();
  const from = options.from ?? 'template';
  const name = `${info.dbPrefix}${process.pid}_${++counter}`;
  await createDatabase(info.adminUrl, name, from === 'template' ? info.template : 'template0');
  const url = databaseUrl(info.adminUrl, name);
  const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10 });
  // DROP ... WITH (FORCE) kills idle connections; their error events must not crash the worker.
  pool.on('error', () => undefined);
  const schema = typeof from === 'object' ? from.schema : 'baton';
  let dropped = false;
  const db: TestDatabase = {
    name,
    url,
    schema,
    pool,
    query: (sql, params) => pool.query(sql, params),
    drop: async () => {
      if (dropped) return;
      dropped = true;
      // A client a test never released would make end() wait forever; FORCE below cuts it anyway.
      await Promise.race([pool.end().catch(() => undefined), new Promise((r) => setTimeout(r, POOL_END_GRACE_MS).unref())]);
      await dropDatabase(info.adminUrl, name);
    },
  };
  if (typeof from === 'object') {
    try {
      await migrate(pool, { schema: from.schema });
    } catch (err) {
      await db.drop();
      throw err;
    }
  }
  return db;
}

/** A fresh database migrated into `schema` (not the template), for tests of non-default schemas. */
export function createMigratedDatabase(schema: string, poolSize?: number): Promise<TestDatabase> {
  return createTestDatabase({ from: { schema }, ...(poolSize === undefined ? {} : { poolSize }) });
}

/**
 * The file's database: created in beforeAll, dropped in afterAll. Call at the
 * top level (or in a describe); read its fields inside hooks and tests only.
 *
 *   const db = useTestDatabase();
 *   it('...', async () => { await db.query('SELECT 1'); });
 */
export function useTestDatabase(options: CreateDatabaseOptions = {}): TestDatabase {
  let current: TestDatabase | undefined;
  const get = (): TestDatabase => {
    if (!current) throw new Error('useTestDatabase(): the database exists only inside hooks and tests (after beforeAll)');
    return current;
  };
  beforeAll(async () => {
    current = await createTestDatabase(options);
  });
  afterAll(async () => {
    await current?.drop();
  });
  return {
    get name() {
      return get().name;
    },
    get url() {
      return get().url;
    },
    get schema() {
      return get().schema;
    },
    get pool() {
      return get().pool;
    },
    query: (sql, params) => get().query(sql, params),
    drop: () => get().drop(),
  };
}

/** Runs `fn` in a transaction that is always rolled back: for pure query tests sharing one database. */
export async function withRollback<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    return await fn(client);
  } finally {
    await client.query('ROLLBACK').catch(() => undefined);
    client.release();
  }
}
