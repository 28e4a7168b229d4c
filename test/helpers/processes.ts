// The process tree as tests need it: children and descendants of a process, and
// its argv, read from /proc (Linux). Liveness comes from the daemon's own module.

import { readdirSync, readFileSync } from 'node:fs';
import { isRunning, processStat } from '../../src/daemon/process-info.ts';

export { isRunning };

/** The parent of a running process, or undefined. */
export function parentOf(pid: number): number | undefined {
  return isRunning(pid) ? processStat(pid)?.ppid : undefined;
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
    if (Number.isInteger(pid) && pid > 0 && isRunning(pid)) {
      const ppid = processStat(pid)?.ppid;
      if (ppid !== undefined) yield [pid, ppid];
    }
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
