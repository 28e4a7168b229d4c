// CPU time of this host's PostgreSQL processes, read from /proc (Linux only): how much of
// a drain the server spent, next to the worker's own process.cpuUsage(). Every process
// named postgres counts, so a run against a busy shared server over-counts, and a backend
// that exits between two readings takes its time with it.

import { readdirSync, readFileSync } from 'node:fs';

/** Kernel clock ticks per second (USER_HZ): 100 on every Linux the benchmark runs on. */
const TICKS_PER_S = 100;

/**
 * Summed CPU ms of every postgres process now alive; null where /proc is missing. Read from
 * /proc/<pid>/schedstat (nanoseconds on the CPU) where the kernel has it: /proc/<pid>/stat
 * counts 10 ms ticks, which for the handful of processes of a sub-second drain adds an
 * error of several ticks.
 */
export function postgresCpuMs(): number | null {
  // BENCH_PG_POSTMASTER: count only that server (the postmaster and its children), so other
  // PostgreSQL servers on the host (a shared development server, say) stay out of the figure.
  const root = process.env.BENCH_PG_POSTMASTER;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return null;
  }
  let ms = 0;
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    if (!name.startsWith('postgres')) continue;
    // Fields after "(comm) ": state is index 0, ppid 1.
    if (root && pid !== root && stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] !== root) continue;
    const precise = schedstatMs(pid);
    if (precise !== null) {
      ms += precise;
      continue;
    }
    // Fields after "(comm) ": state is index 0, utime 11, stime 12 (proc(5) fields 14 and 15).
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ms += ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_S;
  }
  return ms;
}

/** Time on the CPU (ms) from /proc/<pid>/schedstat, or null without it. */
function schedstatMs(pid: string): number | null {
  try {
    const ns = Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
    return Number.isFinite(ns) ? ns / 1e6 : null;
  } catch {
    return null;
  }
}
