// A real PgBouncer in front of the test server, started by a test on a free port: Debian's
// `pgbouncer` binary (installed by .ci/run), run as the postgres user when the test runs as
// root (PgBouncer refuses root), its files in a temp dir removed by stop(). Every database
// name is forwarded to the server as the admin URL's user; clients may log in as any user.

import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { waitFor } from './wait.ts';

const BINARIES = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'];

/** The pgbouncer binary, or null when it is not installed. */
export function pgbouncerBinary(): string | null {
  return BINARIES.find((b) => existsSync(b)) ?? null;
}

export interface PgBouncer {
  port: number;
  /** A URL to `database` through the pooler. */
  url(database: string): string;
  /** Transactions the pooler has carried to `database` since it started (SHOW STATS). */
  transactions(database: string): Promise<number>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Starts PgBouncer in `mode` in front of the server of `serverUrl`. */
export async function startPgBouncer(serverUrl: string, mode: 'transaction' | 'session', poolSize = 20): Promise<PgBouncer> {
  const bin = pgbouncerBinary();
  if (!bin) throw new Error('pgbouncer is not installed (apt-get install pgbouncer; .ci/run installs it)');
  const server = new URL(serverUrl);
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'baton-pgbouncer-'));
  chmodSync(dir, 0o777);
  const password = server.password ? ` password=${decodeURIComponent(server.password)}` : '';
  const ini = path.join(dir, 'pgbouncer.ini');
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432} user=${decodeURIComponent(server.username) || 'postgres'}${password}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = any',
      `pool_mode = ${mode}`,
      'max_client_conn = 1000',
      `default_pool_size = ${poolSize}`,
      'admin_users = postgres',
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
      '',
    ].join('\n'),
  );
  chmodSync(ini, 0o644);
  const asPostgres = process.getuid?.() === 0;
  const child: ChildProcess = asPostgres
    ? spawn('runuser', ['-u', 'postgres', '--', bin, ini], { stdio: 'ignore' })
    : spawn(bin, [ini], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const log = () => (existsSync(path.join(dir, 'pgbouncer.log')) ? readFileSync(path.join(dir, 'pgbouncer.log'), 'utf8') : '');
  const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: url('pgbouncer') });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${log().slice(-2000)}`);
      return admin(async () => true).catch(() => false);
    },
    { timeoutMs: 10_000, message: `pgbouncer to listen on ${port}` },
  );
  return {
    port,
    url,
    transactions: (database) =>
      admin(async (c) => {
        // The admin console speaks the simple protocol only.
        const r = await c.query({ text: 'SHOW STATS', rowMode: 'array' });
        const col = r.fields.findIndex((f) => f.name === 'total_xact_count');
        const row = r.rows.find((x) => x[0] === database);
        return row ? Number(row[col]) : 0;
      }),
    async stop() {
      if (child.exitCode === null) {
        // runuser forwards SIGTERM to pgbouncer, which then closes its connections and exits.
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
