// Who owns the embedded postmaster: a small file in the data dir names the process
// that started it, so a later start can tell a live daemon's server (attach to it)
// from one whose daemon died (stop it, then start our own).

import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
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
