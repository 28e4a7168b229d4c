// Process-tree facts read from /proc (Linux): liveness that counts a zombie as
// dead (an orphan's zombie may never be reaped here), parents and descendants.

import { readdirSync, readFileSync } from 'node:fs';

interface Stat {
  state: string;
  ppid: number;
}

function stat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name sits in parentheses and may itself contain spaces or ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0] ?? '', ppid: Number(fields[1]) };
}

/** True while `pid` exists and has not exited (a zombie has exited). */
export function isRunning(pid: number): boolean {
  const s = stat(pid);
  return s !== undefined && s.state !== 'Z' && s.state !== 'X';
}

/** The parent of a running process, or undefined. */
export function parentOf(pid: number): number | undefined {
  return isRunning(pid) ? stat(pid)?.ppid : undefined;
}

/** Running children of `pid`. */
export function childrenOf(pid: number): number[] {
  return [...running()].filter(([, ppid]) => ppid === pid).map(([child]) => child);
}

/** Running descendants of `pid`, at any depth. */
export function descendantsOf(pid: number): number[] {
  const all = [...running()];
  const out: number[] = [];
  for (let queue = [pid]; queue.length > 0; ) {
    const parent = queue.shift()!;
    const kids = all.filter(([, ppid]) => ppid === parent).map(([child]) => child);
    out.push(...kids);
    queue.push(...kids);
  }
  return out;
}

/** Every running process and its parent. */
function* running(): Generator<[pid: number, ppid: number]> {
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    const s = stat(pid);
    if (s && s.state !== 'Z' && s.state !== 'X') yield [pid, s.ppid];
  }
}

/** The argv of a process ([] when it is gone). */
export function argvOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}
