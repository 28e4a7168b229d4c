// The flow-control checks of a chaos run, from the execution history alone: no concurrency key
// ran more handlers at once than its cap, and no window of a second saw more starts than the
// queue's token bucket allows. A run counts while it held its lease: runs aborted on lease loss
// and runs whose outcome write was fenced off were zombies (their job had been handed on), and
// a killed worker's runs end at the kill. A run whose outcome was never accepted (its worker
// could not prove its lease and wrote nothing: self-fenced) held its lease at most until the
// reply to its last accepted heartbeat (or its start) plus a lease length; after that another
// worker may hold the job, so it counts only until then.

import type { readHistory } from './history.ts';

type History = ReturnType<typeof readHistory>;

export interface FlowLimits {
  /** Concurrency key of each job (jobs without one are not capped). */
  keyOf: Map<string, string>;
  /** The workers' lease length. */
  leaseMs: number;
  cap: number;
  /** Starts allowed per period, and the bucket's size. */
  rate: { limit: number; periodMs: number };
}

interface Run {
  jobId: string;
  start: number;
  end: number;
}

function legitimateRuns(history: History, leaseMs: number): Run[] {
  const killedAt = new Map<string, number>();
  const fenced = new Set<string>();
  const accepted = new Set<string>();
  /** The reply to each lease's last accepted heartbeat. */
  const proven = new Map<string, number>();
  for (const r of history) {
    if (r.type === 'fault' && r.kind === 'kill' && r.worker) killedAt.set(r.worker, Math.min(killedAt.get(r.worker) ?? r.at, r.at));
    if (r.type !== 'write') continue;
    const id = `${r.jobId}/${r.token}`;
    if ((r.kind === 'complete' || r.kind === 'fail') && r.rowsAffected === 0) fenced.add(id);
    if (r.kind !== 'heartbeat' && (r.rowsAffected ?? 0) > 0) accepted.add(id);
    if (r.kind === 'heartbeat' && (r.rowsAffected ?? 0) > 0) proven.set(id, Math.max(proven.get(id) ?? 0, r.at));
  }
  const open = new Map<string, { jobId: string; worker: string; start: number }>();
  const runs: Run[] = [];
  for (const r of history) {
    if (r.type !== 'start' && r.type !== 'end') continue;
    const id = `${r.jobId}/${r.token}`;
    if (r.type === 'start') open.set(id, { jobId: r.jobId, worker: r.worker, start: r.at });
    else {
      const s = open.get(id);
      open.delete(id);
      if (!s || r.outcome === 'aborted' || fenced.has(id)) continue;
      const end = accepted.has(id) ? r.at : Math.min(r.at, Math.max(s.start, proven.get(id) ?? 0) + leaseMs);
      runs.push({ jobId: s.jobId, start: s.start, end });
    }
  }
  for (const [id, s] of open)
    if (!fenced.has(id)) runs.push({ jobId: s.jobId, start: s.start, end: killedAt.get(s.worker) ?? Number.POSITIVE_INFINITY });
  return runs;
}

function peak(runs: Run[]): number {
  const events = runs.flatMap((r) => [
    { t: r.start, d: 1 },
    { t: r.end, d: -1 },
  ]);
  events.sort((a, b) => a.t - b.t || a.d - b.d);
  let n = 0;
  let top = 0;
  for (const e of events) {
    n += e.d;
    top = Math.max(top, n);
  }
  return top;
}

/** Violations of the caps and the rate limit; also the peaks seen, for the report. */
export function checkFlow(
  history: History,
  limits: FlowLimits,
): { violations: string[]; peaks: Record<string, number>; peakStarts: number } {
  const runs = legitimateRuns(history, limits.leaseMs);
  const byKey = new Map<string, Run[]>();
  for (const r of runs) {
    const key = limits.keyOf.get(r.jobId);
    if (key !== undefined) byKey.set(key, [...(byKey.get(key) ?? []), r]);
  }
  const violations: string[] = [];
  const peaks: Record<string, number> = {};
  for (const [key, rs] of byKey) {
    peaks[key] = peak(rs);
    if (peaks[key] > limits.cap) violations.push(`cap: key ${key} ran ${peaks[key]} handlers at once (cap ${limits.cap})`);
  }
  // Every start (zombies too: each took a token when it was claimed). A full bucket plus one
  // period's refill fits in any window of one period; one more for the ms clock's rounding.
  const starts = history
    .filter((r) => r.type === 'start')
    .map((r) => r.at)
    .sort((a, b) => a - b);
  let peakStarts = 0;
  for (let i = 0, j = 0; i < starts.length; i++) {
    while (starts[i]! - starts[j]! >= limits.rate.periodMs) j++;
    peakStarts = Math.max(peakStarts, i - j + 1);
  }
  const allowed = 2 * limits.rate.limit + 1;
  if (peakStarts > allowed) violations.push(`rate: ${peakStarts} starts within ${limits.rate.periodMs} ms (at most ${allowed})`);
  return { violations, peaks, peakStarts };
}
