// Facts about other processes: whether one still runs (a zombie has exited, and an
// orphan's zombie may never be reaped) and when it started, which tells a reused pid
// apart. Read from /proc where there is one, else from kill(pid, 0).

import { existsSync, readFileSync } from 'node:fs';

export interface ProcessStat {
  /** One letter: R, S, D, Z (zombie), ... */
  state: string;
  ppid: number;
  /** Clock ticks after boot; with the pid, it names one process for good. */
  startTime: string;
}

const HAS_PROC = existsSync('/proc/self/stat');

/** /proc/<pid>/stat, or undefined when the process is gone or there is no /proc. */
export function processStat(pid: number): ProcessStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name sits in parentheses and may itself contain spaces or ')'. The
  // fields after it start at proc(5)'s field 3 (state): ppid is 4, starttime 22.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0] ?? '', ppid: Number(fields[1]), startTime: fields[19] ?? '' };
}

/** True while `pid` exists and has not exited. */
export function isRunning(pid: number): boolean {
  if (HAS_PROC) {
    const s = processStat(pid);
    return s !== undefined && s.state !== 'Z' && s.state !== 'X';
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
