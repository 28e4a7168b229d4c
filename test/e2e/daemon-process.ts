// Runs the real daemon (bin/baton.js, or `npm start`) as a child process for
// e2e tests: free ports, captured output, exit as a promise.

import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { constants as osConstants } from 'node:os';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../helpers/wait.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The launcher users run (`npx baton`, `npm start`): registers tsx in-process, then runs the CLI. */
const BIN = fileURLToPath(new URL('../../bin/baton.js', import.meta.url));

/** A port that was free a moment ago (the kernel picked it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export interface DaemonProcess {
  child: ChildProcess;
  /** Resolves with the exit code (or 128+n for a signal death). */
  exited: Promise<number>;
  /** Everything written so far (stdout + stderr), for failure messages. */
  output(): string;
  /** What was written to stdout alone. */
  stdout(): string;
  /** What was written to stderr alone. */
  stderr(): string;
  /** Sends SIGKILL if still running (cleanup only); to the whole process group when it has its own. */
  kill(): void;
}

/** PATH, HOME and friends: the minimal base every spawned process gets (no DATABASE_URL). */
export function baseEnv(): Record<string, string> {
  const base: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG']) if (process.env[k]) base[k] = process.env[k]!;
  return base;
}

/**
 * Spawns `baton <args>` with `env` as the WHOLE extra environment on top of a
 * minimal base (PATH, HOME). DATABASE_URL is never inherited: pass it to use one.
 */
export function runBaton(args: string[], env: Record<string, string>): DaemonProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: REPO_ROOT,
    env: { ...baseEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return track(child, false);
}

/**
 * Spawns `npm start` in the repository, as a terminal would: in a process group of
 * its own (so the test can signal the whole group, as Ctrl-C does), with `env` on
 * top of the minimal base. npm's update check is off: no registry traffic.
 */
export function runNpmStart(env: Record<string, string>): DaemonProcess {
  const child = spawn('npm', ['start'], {
    cwd: REPO_ROOT,
    env: { ...baseEnv(), npm_config_update_notifier: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  return track(child, true);
}

function track(child: ChildProcess, ownGroup: boolean): DaemonProcess {
  let out = '';
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    stdout += d;
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    stderr += d;
  });
  const exited = new Promise<number>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? osConstants.signals[signal] : 0)));
  });
  let done = false;
  void exited.then(() => (done = true));
  return {
    child,
    exited,
    output: () => out,
    stdout: () => stdout,
    stderr: () => stderr,
    kill: () => {
      try {
        if (ownGroup) process.kill(-child.pid!, 'SIGKILL');
        else if (!done) child.kill('SIGKILL');
      } catch {
        // Already gone.
      }
    },
  };
}

/** Waits until GET /readyz answers 200, failing early (with the output) if the daemon exits. */
export async function waitReady(d: DaemonProcess, baseUrl: string, timeoutMs = 90_000): Promise<void> {
  let exitCode: number | undefined;
  void d.exited.then((c) => (exitCode = c));
  await waitFor(
    async () => {
      if (exitCode !== undefined) throw new Error(`daemon exited with ${exitCode} before it was ready:\n${d.output()}`);
      const res = await fetch(`${baseUrl}/readyz`).catch(() => null);
      return res?.status === 200;
    },
    { timeoutMs, intervalMs: 100, message: `daemon ready at ${baseUrl}` },
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n--- daemon output ---\n${d.output().slice(-4000)}`);
  });
}

/** Races the exit against a deadline; throws with the output on timeout. */
export async function waitExit(d: DaemonProcess, timeoutMs: number): Promise<number> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    t = setTimeout(() => reject(new Error(`daemon did not exit within ${timeoutMs} ms:\n${d.output().slice(-4000)}`)), timeoutMs);
  });
  try {
    return await Promise.race([d.exited, timeout]);
  } finally {
    clearTimeout(t);
  }
}
