// The one embedded-PostgreSQL wrapper, for the daemon, the tests and the benchmark.
// Two kinds of cluster: a persistent one in <dataDir>/pg, kept across restarts (the
// daemon's, when DATABASE_URL is unset), and a throwaway one in a fresh temp dir that
// stop() removes (tests, benchmarks). Either listens on 127.0.0.1 only, with
// PostgreSQL's own durability unless the caller passes settings that say otherwise.
// Invariants: we stop a server we started, or one whose starter died
// (embedded-owner.ts); a live process's server is attached to and left running.

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { type Logger, noopLogger } from '../core/logger.ts';
import { resolveDataDir } from './embedded-data-dir.ts';
import { forgetOwner, ownerAlive, readOwner, recordOwner, startSentinel, stopPostmaster } from './embedded-owner.ts';
import {
  binaries,
  EMBEDDED_USER,
  EmbeddedPostgresError,
  giveToServer,
  initialise,
  type ServerIds,
  serverIds,
  spawnPostmaster,
} from './embedded-server.ts';
import { isRunning } from './process-info.ts';

export { EMBEDDED_USER, EmbeddedPostgresError };
/** The superuser's password of a persistent cluster: no secret, the server is local-only. */
export const EMBEDDED_PASSWORD = 'baton';
const STOP_TIMEOUT_MS = 30_000;
/** Throwaway clusters live in os.tmpdir()/<prefix>XXXXXX (a prefix nothing else of ours uses: the sweep removes them). */
const THROWAWAY_PREFIX = 'baton-embedded-pg-';
/** A throwaway dir with no owner on record this old is an aborted start's (initdb takes seconds). */
const STALE_DIR_MS = 10 * 60_000;
/** The port a persistent cluster prefers when nothing is remembered and it is free. */
export const PG_PORT_PREFERRED = 54329;
/** The file in a persistent data dir that remembers its cluster's port across restarts. */
export const PORT_FILE = 'pg-port';

/**
 * Server settings every embedded cluster gets before the caller's own. Durability
 * (fsync, synchronous_commit, full_page_writes) stays at PostgreSQL's defaults.
 */
const DEFAULT_SETTINGS: Readonly<Record<string, string | number>> = {
  // Local only: the persistent cluster's password is documented, not secret.
  listen_addresses: '127.0.0.1',
  // No Unix socket: its default directory may be missing, or another server's.
  unix_socket_directories: '',
  // PostgreSQL's 100 is too few for a test run's parallel files, or a daemon's pool beside one-shot commands.
  max_connections: 200,
};

export interface EmbeddedOptions {
  /**
   * Absolute root of a persistent cluster (PostgreSQL's files in `<dataDir>/pg`),
   * created on first use and kept across restarts; under root, a directory the
   * `postgres` user can reach when it cannot reach this one (embedded-data-dir.ts).
   * Omitted: a throwaway cluster in a fresh directory under os.tmpdir(), with a random
   * password, removed by stop().
   */
  dataDir?: string;
  /**
   * Port on 127.0.0.1. Omitted: for a throwaway cluster, one the kernel says is free; for a
   * persistent one, the port remembered in `<dataDir>/pg-port` while it is free, else
   * PG_PORT_PREFERRED (54329) or any free port, which is then remembered (so two checkouts on
   * one machine each get their own).
   */
  port?: number;
  /**
   * Server settings passed as `-c name=value`, over DEFAULT_SETTINGS
   * (listen_addresses=127.0.0.1, no Unix socket, max_connections=200). A caller that
   * gives up durability (`fsync: 'off'`) should say why where it does.
   */
  settings?: Readonly<Record<string, string | number>>;
  /** Default: silent. */
  logger?: Logger;
}

export interface EmbeddedPostgres {
  /** Superuser URL of database `postgres`. */
  connectionString: string;
  port: number;
  /** The directory holding `pg/` (the cluster) and the owner record; may be a fallback. */
  dataDir: string;
  /** False when we attached to a server already running on this data dir (we leave it running). */
  owned: boolean;
  /** Fast shutdown; waits for the postmaster to exit; removes a throwaway cluster. Idempotent. */
  stop(): Promise<void>;
  /** Synchronous best effort for crash paths: asks the postmaster to shut down fast. */
  killNow(): void;
}

/**
 * Starts (initialising on first use) or attaches to an embedded PostgreSQL.
 * @throws EmbeddedPostgresError when it is not installed, cannot start, or a server left
 *   on the data dir cannot be stopped
 */
export async function startEmbeddedPostgres(opts: EmbeddedOptions = {}): Promise<EmbeddedPostgres> {
  const log = (opts.logger ?? noopLogger).child({ component: 'embedded-postgres' });
  // Before anything is created: without the binaries there is nothing to try.
  await binaries();
  const ids = serverIds();
  const throwaway = opts.dataDir === undefined;
  const dataDir = throwaway ? await throwawayDir(ids) : await resolveDataDir(opts.dataDir!, ids, log);
  const clusterDir = path.join(dataDir, 'pg');

  const attached = await attachOrClear(dataDir, clusterDir, log);
  if (attached) return attached;

  const password = throwaway ? randomBytes(12).toString('hex') : EMBEDDED_PASSWORD;
  const port = opts.port ?? (throwaway ? await freePort() : await rememberedPort(dataDir, log));
  const remove = throwaway ? () => rm(dataDir, { recursive: true, force: true }) : async () => undefined;
  try {
    if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await initialise(clusterDir, password, ids, log);
    log.info({ clusterDir, port }, 'starting embedded PostgreSQL');
    const postmaster = await spawnPostmaster({
      clusterDir,
      port,
      settings: { ...DEFAULT_SETTINGS, ...opts.settings },
      ids,
      log,
      // Both before it is ready: a start that dies half-way must not leave it running either.
      onSpawn: (pid) => {
        recordOwner(dataDir, pid);
        return startSentinel(pid, clusterDir, log);
      },
    });
    let stopped: Promise<void> | undefined;
    return {
      connectionString: connectionString(password, port),
      port,
      dataDir,
      owned: true,
      killNow: postmaster.killNow,
      stop: () =>
        (stopped ??= (async () => {
          await postmaster.stop();
          forgetOwner(dataDir);
          await remove();
        })()),
    };
  } catch (err) {
    await remove();
    throw err;
  }
}

/**
 * The port a persistent cluster listens on when none is configured: the one it had before, as
 * long as nothing else holds it; otherwise 54329 or any free one, written down for next time.
 */
async function rememberedPort(dataDir: string, log: Logger): Promise<number> {
  const file = path.join(dataDir, PORT_FILE);
  const text = await readFile(file, 'utf8').catch(() => '');
  const remembered = /^\d{1,5}$/.test(text.trim()) ? Number(text.trim()) : undefined;
  if (remembered !== undefined && remembered > 0 && remembered < 65_536 && (await portIsFree(remembered))) return remembered;
  const port = (await portIsFree(PG_PORT_PREFERRED)) ? PG_PORT_PREFERRED : await freePort();
  if (remembered !== undefined) {
    log.info({ remembered, port }, `the embedded PostgreSQL's port ${remembered} is taken (another checkout's server?); using ${port}`);
  }
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, `${port}\n`);
  return port;
}

/** Whether 127.0.0.1:port can be bound right now. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

function connectionString(password: string, port: number): string {
  return `postgres://${EMBEDDED_USER}:${password}@127.0.0.1:${port}/postgres`;
}

/**
 * A server already running on the data dir: attached to when its owner lives (a daemon,
 * or a one-shot command; never stopped under them), stopped when its owner died.
 */
async function attachOrClear(dataDir: string, clusterDir: string, log: Logger): Promise<EmbeddedPostgres | null> {
  const running = await runningPostmaster(clusterDir);
  if (!running) return null;
  const owner = readOwner(dataDir);
  if (owner?.postmasterPid === running.pid && !ownerAlive(owner)) {
    log.warn(
      { postmasterPid: running.pid, ownerPid: owner.pid, clusterDir },
      'embedded PostgreSQL left running by a process that died; stopping it',
    );
    if (!(await stopPostmaster(running.pid, STOP_TIMEOUT_MS))) {
      throw new EmbeddedPostgresError(
        `embedded PostgreSQL (pid ${running.pid}) left running by a dead process (pid ${owner.pid}) on ${clusterDir} did not stop; stop it with: kill -QUIT ${running.pid}`,
      );
    }
    return null;
  }
  if (running.status !== 'ready') {
    throw new EmbeddedPostgresError(
      `embedded PostgreSQL (pid ${running.pid}) on ${clusterDir} is "${running.status || 'starting'}", not ready; retry, or stop it with: kill -INT ${running.pid}`,
    );
  }
  log.info(
    { postmasterPid: running.pid, port: running.port, clusterDir },
    'embedded PostgreSQL already running on this data dir; attaching (it will be left running)',
  );
  return {
    connectionString: connectionString(EMBEDDED_PASSWORD, running.port),
    port: running.port,
    dataDir,
    owned: false,
    stop: async () => undefined,
    killNow: () => undefined,
  };
}

/** A postmaster.pid whose process is alive means a server (ours, from a previous run) is up. */
async function runningPostmaster(clusterDir: string): Promise<{ pid: number; port: number; status: string } | null> {
  let text: string;
  try {
    text = await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8');
  } catch {
    return null;
  }
  const lines = text.split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  const status = (lines[7] ?? '').trim();
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port)) return null;
  // A stale file (postgres itself replaces it on start), or an unreaped zombie's.
  if (!isRunning(pid)) return null;
  return { pid, port, status };
}

/**
 * A fresh directory for a throwaway cluster, after removing those of earlier runs that
 * were killed before their stop(). mkdtemp makes it 0700: it is given to the server's user.
 */
async function throwawayDir(ids: ServerIds): Promise<string> {
  await removeStaleThrowaways();
  const dir = await mkdtemp(path.join(os.tmpdir(), THROWAWAY_PREFIX));
  await giveToServer(dir, ids);
  return dir;
}

/**
 * Throwaway dirs of earlier runs: ours by name and layout, with no live postmaster, and
 * either an owner on record that died or none and old enough not to be a start in progress.
 */
async function removeStaleThrowaways(): Promise<void> {
  const names = (await readdir(os.tmpdir()).catch(() => [] as string[])).filter((n) => n.startsWith(THROWAWAY_PREFIX));
  for (const name of names) {
    const dir = path.join(os.tmpdir(), name);
    try {
      const entries = await readdir(dir);
      // Only the cluster, its initdb scratch files and the owner record: anything else is not ours.
      if (!entries.every((e) => e === 'pg' || e.startsWith('pg.') || e === 'postmaster.owner')) continue;
      if (await runningPostmaster(path.join(dir, 'pg'))) continue;
      const owner = readOwner(dir);
      if (owner ? ownerAlive(owner) : Date.now() - (await stat(dir)).mtimeMs < STALE_DIR_MS) continue;
      await rm(dir, { recursive: true, force: true });
    } catch {
      // Someone else's dir we cannot read, or it vanished meanwhile: leave it.
    }
  }
}

/** A TCP port free right now on 127.0.0.1 (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}
