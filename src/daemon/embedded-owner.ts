// Who owns the embedded postmaster: a small file in the data dir names the process
// that started it, so a later start can tell a live daemon's server (attach to it)
// from one whose daemon died (stop it, then start our own); and a sentinel process
// stops the postmaster as soon as its owner dies, even by kill -9.

import { spawn } from 'node:child_process';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import path from 'node:path';
import type { Logger } from '../core/logger.ts';
import { isRunning, processStat } from './process-info.ts';

/** In the data dir, next to the cluster: `<dataDir>/postmaster.owner`. */
const OWNER_FILE = 'postmaster.owner';
const STOP_POLL_MS = 50;

export interface Owner {
  /** The process that started the postmaster (a daemon, or a one-shot command). */
  pid: number;
  /** Its start time where /proc tells it: a reused pid does not pass for the owner. */
  startTime?: string;
  postmasterPid: number;
}

/** Records this process as the owner of `postmasterPid`; atomic (write, then rename). */
export function recordOwner(dataDir: string, postmasterPid: number): void {
  const owner: Owner = { pid: process.pid, startTime: processStat(process.pid)?.startTime, postmasterPid };
  const file = path.join(dataDir, OWNER_FILE);
  writeFileSync(`${file}.tmp`, `${JSON.stringify(owner)}\n`);
  renameSync(`${file}.tmp`, file);
}

/** The recorded owner, or undefined (none yet, or written by a Baton that did not record one). */
export function readOwner(dataDir: string): Owner | undefined {
  try {
    const o = JSON.parse(readFileSync(path.join(dataDir, OWNER_FILE), 'utf8')) as Partial<Owner>;
    return Number.isInteger(o.pid) && Number.isInteger(o.postmasterPid) ? (o as Owner) : undefined;
  } catch {
    return undefined;
  }
}

export function forgetOwner(dataDir: string): void {
  rmSync(path.join(dataDir, OWNER_FILE), { force: true });
}

/** The recorded owner still runs (and is the same process, not a later one with its pid). */
export function ownerAlive(owner: Owner): boolean {
  if (!isRunning(owner.pid)) return false;
  return owner.startTime === undefined || processStat(owner.pid)?.startTime === owner.startTime;
}

/**
 * Asks a postmaster we are not the parent of for a fast shutdown (SIGINT) and polls
 * until it has exited, escalating to SIGQUIT (immediate) halfway to `timeoutMs`.
 * @returns false when it still runs at the deadline.
 */
export async function stopPostmaster(pid: number, timeoutMs: number): Promise<boolean> {
  const start = Date.now();
  let escalated = false;
  signal(pid, 'SIGINT');
  while (isRunning(pid)) {
    const elapsed = Date.now() - start;
    if (elapsed >= timeoutMs) return false;
    if (!escalated && elapsed >= timeoutMs / 2) {
      escalated = true;
      signal(pid, 'SIGQUIT');
    }
    await new Promise((r) => setTimeout(r, STOP_POLL_MS));
  }
  return true;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Exited meanwhile.
  }
}

/** The sentinel's $0, which names it in a process list. */
export const SENTINEL_NAME = 'baton-pg-sentinel';

// Reads stdin, a pipe whose only writer is the owner, until EOF: the kernel closes the
// pipe when the owner exits, however it died. Then, if postmaster.pid still names the
// postmaster it watches (not a later process that got the pid), asks for a fast shutdown.
const SENTINEL_SCRIPT = 'read -r _; read -r pid < "$2/postmaster.pid" && [ "$pid" = "$1" ] && kill -INT "$1"';

export interface Sentinel {
  /** Ends the sentinel without it touching the postmaster. Idempotent. */
  stop(): void;
}

/**
 * Starts the sentinel of `postmasterPid`: a shell in a process group of its own (a
 * terminal's Ctrl-C, or a kill of our group, must not take it down with us).
 */
export function startSentinel(postmasterPid: number, clusterDir: string, log: Logger): Sentinel {
  const child = spawn('/bin/sh', ['-c', SENTINEL_SCRIPT, SENTINEL_NAME, String(postmasterPid), clusterDir], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  child.once('error', (err) => {
    log.warn({ err }, 'no sentinel for the embedded PostgreSQL: if this process is killed, the next start stops it');
  });
  // Neither the sentinel nor our end of its pipe may keep this process alive.
  child.unref();
  (child.stdin as Socket | null)?.unref();
  return {
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
