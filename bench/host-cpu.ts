// CPU time of this host's PostgreSQL processes, read from /proc (Linux only): how much of
// a drain the server spent, next to the worker's own process.cpuUsage(). Every process
// named postgres counts, so a run against a busy shared server over-counts.

import { readdirSync, readFileSync } from 'node:fs';

/** Kernel clock ticks per second (USER_HZ): 100 on every Linux the benchmark runs on. */
const TICKS_PER_S = 100;

/** Summed user + system CPU ms of every postgres process now alive; null where /proc is missing. */
export function postgresCpuMs(): number | null {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return null;
  }
  let ticks = 0;
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    if (!name.startsWith('postgres')) continue;
    // Fields after "(comm) ": state is index 0, utime 11, stime 12 (proc(5) fields 14 and 15).
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(f[11]) + Number(f[12]);
  }
  return (ticks * 1000) / TICKS_PER_S;
}
