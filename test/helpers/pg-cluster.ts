// A private, throw-away PostgreSQL 15 cluster for tests that stop, crash or
// partition the database. Runs as the `postgres` user on a free port, never
// touches the system cluster, and is torn down on process exit.

import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const PG_BIN = process.env.BATON_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface PgClusterOptions {
  /** Address to listen on. Default 127.0.0.1. */
  host?: string;
  /** Port; a free one is picked when absent. */
  port?: number;
  /** Run the server inside this network namespace (`ip netns exec`). */
  netns?: string;
  /** Extra postgresql.conf settings. */
  settings?: Record<string, string | number>;
}

export interface PgCluster {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly logFile: string;
  /** Connection string for `database` (default postgres) as user postgres. */
  url(database?: string): string;
  start(): Promise<void>;
  /** `pg_ctl stop -m immediate`: a crash, WAL recovery on the next start. */
  stopImmediate(): Promise<void>;
  restart(): Promise<void>;
  /** `pg_ctl promote` (a standby's): waits until it accepts writes. */
  promote(): Promise<void>;
  /** Stops (immediate) and removes the data directory. Idempotent. */
  destroy(): Promise<void>;
  isRunning(): boolean;
}

/** Asks the kernel for a free TCP port on `host`. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

function postgresIds(): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}

/** argv that runs `cmd` as the postgres user (and inside `netns` when given). */
function asPostgres(cmd: string, args: string[], netns?: string): [string, string[]] {
  const uid = process.getuid?.();
  const inner: string[] = uid === 0 ? ['runuser', '-u', 'postgres', '--', cmd, ...args] : [cmd, ...args];
  if (uid !== 0 && os.userInfo().username !== 'postgres') {
    throw new Error('pg-cluster: must run as root (to switch to postgres) or as the postgres user');
  }
  const full = netns ? ['ip', 'netns', 'exec', netns, ...inner] : inner;
  return [full[0]!, full.slice(1)];
}

const live = new Set<PgClusterImpl>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const c of live) c.destroySync();
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      for (const c of live) c.destroySync();
      process.exit(128 + (os.constants.signals[sig] ?? 1));
    });
  }
}

class PgClusterImpl implements PgCluster {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly logFile: string;
  private readonly baseDir: string;
  private readonly netns: string | undefined;
  private running = false;
  private destroyed = false;

  constructor(baseDir: string, host: string, port: number, netns: string | undefined) {
    live.add(this);
    installExitHook();
    this.baseDir = baseDir;
    this.dataDir = path.join(baseDir, 'data');
    this.logFile = path.join(baseDir, 'postgres.log');
    this.host = host;
    this.port = port;
    this.netns = netns;
  }

  url(database = 'postgres'): string {
    return `postgres://postgres@${this.host}:${this.port}/${database}`;
  }

  isRunning(): boolean {
    return this.running;
  }

  private pgCtl(args: string[]): Promise<unknown> {
    const [cmd, argv] = asPostgres(path.join(PG_BIN, 'pg_ctl'), args, this.netns);
    return run(cmd, argv, { timeout: 60_000 });
  }

  async start(): Promise<void> {
    if (this.destroyed) throw new Error('pg-cluster: destroyed');
    try {
      await this.pgCtl(['-D', this.dataDir, '-l', this.logFile, '-w', '-t', '60', 'start']);
    } catch (err) {
      const tail = existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8').split('\n').slice(-15).join('\n') : '';
      throw new Error(`pg-cluster: start failed on ${this.host}:${this.port}: ${(err as Error).message}\n${tail}`, { cause: err });
    }
    this.running = true;
  }

  async stopImmediate(): Promise<void> {
    await this.pgCtl(['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
    this.running = false;
  }

  async promote(): Promise<void> {
    await this.pgCtl(['-D', this.dataDir, '-w', '-t', '60', 'promote']);
  }

  async restart(): Promise<void> {
    await this.stopImmediate();
    await this.start();
  }

  async destroy(): Promise<void> {
    if (this.destroyed) return;
    if (this.running) await this.stopImmediate().catch(() => undefined);
    this.destroyed = true;
    live.delete(this);
    rmSync(this.baseDir, { recursive: true, force: true });
  }

  /** For the exit hook: synchronous, best effort. */
  destroySync(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    try {
      const [cmd, argv] = asPostgres(path.join(PG_BIN, 'pg_ctl'), ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop'], this.netns);
      if (existsSync(path.join(this.dataDir, 'postmaster.pid'))) execFileSync(cmd, argv, { stdio: 'ignore', timeout: 30_000 });
    } catch {
      // already down
    }
    rmSync(this.baseDir, { recursive: true, force: true });
  }
}

/** initdb (--no-sync, trust auth, fsync=off) and start a cluster. Takes ~1.5 s. */
export async function startPgCluster(options: PgClusterOptions = {}): Promise<PgCluster> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? (await freePort(options.netns ? '127.0.0.1' : host));
  const baseDir = mkdtempSync(path.join(os.tmpdir(), 'baton-pg-'));
  if (process.getuid?.() === 0) {
    const { uid, gid } = postgresIds();
    chownSync(baseDir, uid, gid);
  }
  const cluster = new PgClusterImpl(baseDir, host, port, options.netns);
  try {
    const [cmd, argv] = asPostgres(path.join(PG_BIN, 'initdb'), [
      '-D',
      cluster.dataDir,
      '-U',
      'postgres',
      '--auth=trust',
      '--no-sync',
      '-E',
      'UTF8',
      '--locale=C',
    ]);
    await run(cmd, argv, { timeout: 120_000 });
    const settings: Record<string, string | number> = {
      port,
      listen_addresses: `'${host}'`,
      unix_socket_directories: `'${baseDir}'`,
      // fsync off is safe here (the OS survives a PG crash); synchronous_commit must stay on,
      // or an immediate stop loses acknowledged commits and the chaos checker sees phantom losses.
      fsync: 'off',
      full_page_writes: 'off',
      max_connections: 200,
      shared_buffers: "'32MB'",
      logging_collector: 'off',
      ...options.settings,
    };
    const conf = Object.entries(settings)
      .map(([k, v]) => `${k} = ${v}`)
      .join('\n');
    // The conf file is owned by postgres; root may still append to it.
    appendFileSync(path.join(cluster.dataDir, 'postgresql.conf'), `\n# baton test cluster\n${conf}\n`);
    // Clients on a veth (namespace runs) come from the directly connected subnet only.
    appendFileSync(path.join(cluster.dataDir, 'pg_hba.conf'), '\nhost all all samenet trust\n');
    writeFileSync(cluster.logFile, '');
    if (process.getuid?.() === 0) {
      const { uid, gid } = postgresIds();
      chownSync(cluster.logFile, uid, gid);
    }
    await cluster.start();
  } catch (err) {
    await cluster.destroy().catch(() => undefined);
    throw err;
  }
  return cluster;
}

/**
 * A streaming standby of `primary` (pg_basebackup -R) on a free port, started. With
 * `synchronous_standby_names = '*'` on the primary its commits wait for this standby's flush.
 */
export async function startStandby(primary: PgCluster, options: { settings?: Record<string, string | number> } = {}): Promise<PgCluster> {
  const host = primary.host;
  const port = await freePort(host);
  const baseDir = mkdtempSync(path.join(os.tmpdir(), 'baton-pg-standby-'));
  if (process.getuid?.() === 0) {
    const { uid, gid } = postgresIds();
    chownSync(baseDir, uid, gid);
  }
  const standby = new PgClusterImpl(baseDir, host, port, undefined);
  try {
    const [cmd, argv] = asPostgres(path.join(PG_BIN, 'pg_basebackup'), [
      '-D',
      standby.dataDir,
      '-h',
      host,
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-R',
      '-X',
      'stream',
      '--no-sync',
      '-c',
      'fast',
    ]);
    await run(cmd, argv, { timeout: 120_000 });
    const settings: Record<string, string | number> = {
      port,
      unix_socket_directories: `'${baseDir}'`,
      hot_standby: 'on',
      ...options.settings,
    };
    const conf = Object.entries(settings)
      .map(([k, v]) => `${k} = ${v}`)
      .join('\n');
    appendFileSync(path.join(standby.dataDir, 'postgresql.conf'), `\n# baton test standby\n${conf}\n`);
    writeFileSync(standby.logFile, '');
    if (process.getuid?.() === 0) {
      const { uid, gid } = postgresIds();
      chownSync(standby.logFile, uid, gid);
    }
    await standby.start();
  } catch (err) {
    await standby.destroy().catch(() => undefined);
    throw err;
  }
  return standby;
}

/**
 * Why this process cannot start private clusters and standbys (null: it can): the PostgreSQL 15
 * binaries with pg_basebackup, and root (to run them as postgres) or the postgres user itself.
 */
export function clusterUnavailable(): string | null {
  if (!existsSync(path.join(PG_BIN, 'pg_basebackup'))) return `no PostgreSQL binaries with pg_basebackup in ${PG_BIN} (BATON_PG_BIN)`;
  if (process.getuid?.() !== 0 && os.userInfo().username !== 'postgres') return 'not root nor the postgres user';
  return null;
}
