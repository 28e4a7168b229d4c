// Reads the flow workers' execution logs and checks them as the chaos checker does: from what
// handlers did, not from what the database says. A handler of a process that was killed runs
// until the kill.

import { readFileSync } from 'node:fs';

export interface Run {
  job: string;
  attempt: number;
  worker: string;
  start: number;
  /** When the handler returned, or its process was killed. */
  end: number;
}

export function readRuns(logs: string[], killedAt: Map<string, number>): Run[] {
  const open = new Map<string, Omit<Run, 'end'>>();
  const runs: Run[] = [];
  for (const file of logs) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      if (!line) continue;
      const e = JSON.parse(line) as { ev: 'start' | 'end'; job: string; attempt: number; worker: string; t: number };
      const id = `${e.worker}/${e.job}/${e.attempt}`;
      if (e.ev === 'start') open.set(id, { job: e.job, attempt: e.attempt, worker: e.worker, start: e.t });
      else {
        const s = open.get(id);
        if (s) runs.push({ ...s, end: e.t });
        open.delete(id);
      }
    }
  }
  for (const s of open.values()) runs.push({ ...s, end: killedAt.get(s.worker) ?? Number.POSITIVE_INFINITY });
  return runs;
}

/** The most runs that overlapped at any instant (an end and a start at the same time do not overlap). */
export function peakRunning(runs: Run[]): number {
  const events = runs.flatMap((r) => [
    { t: r.start, d: 1 },
    { t: r.end, d: -1 },
  ]);
  events.sort((a, b) => a.t - b.t || a.d - b.d);
  let n = 0;
  let peak = 0;
  for (const e of events) {
    n += e.d;
    peak = Math.max(peak, n);
  }
  return peak;
}

/** The share of [from, to] during which `cap` runs were running, as a fraction of cap x time. */
export function utilisation(runs: Run[], cap: number, from: number, to: number): number {
  let busy = 0;
  for (const r of runs) busy += Math.max(0, Math.min(r.end, to) - Math.max(r.start, from));
  return busy / (cap * (to - from));
}

/** The most starts inside any window of `windowMs`. */
export function peakStartsPerWindow(runs: Run[], windowMs: number): number {
  const starts = runs.map((r) => r.start).sort((a, b) => a - b);
  let peak = 0;
  for (let i = 0, j = 0; i < starts.length; i++) {
    while (starts[i]! - starts[j]! >= windowMs) j++;
    peak = Math.max(peak, i - j + 1);
  }
  return peak;
}
