// Splits each job's start latency into the stages of a notify-mode wake-up, read off the
// worker's pg trace (child/pg-trace.ts): commit -> notification -> claim sent -> claim
// reply -> handler start. Meant for sparse rates (jobs further apart than one latency),
// where the first event of each kind after a job's commit belongs to that job.

import type { TraceEvent, TraceKind } from '../child/pg-trace.ts';
import { percentile } from '../stats.ts';

export interface JobStages {
  seq: number;
  /** Handler start - commit read by the producer: the harness's latency. */
  latencyMs: number;
  /** Notification at the worker - commit (negative: it arrived before the producer read its commit). */
  wakeMs: number;
  /** Claim sent - notification. */
  toClaimMs: number;
  /** Claim reply - claim sent. */
  claimMs: number;
  /** Handler start - claim reply. */
  toHandlerMs: number;
}

export const STAGES = ['wakeMs', 'toClaimMs', 'claimMs', 'toHandlerMs'] as const;
export type Stage = (typeof STAGES)[number];

/**
 * One entry per started job. A notification counts from `leadMs` before the commit was
 * read, because it may overtake the producer's reply; a stage whose event is missing
 * (the job was found by a poll or by an earlier claim) is NaN.
 */
export function jobStages(
  commits: ReadonlyArray<readonly [number, number]>,
  starts: ReadonlyArray<readonly [number, number]>,
  events: readonly TraceEvent[],
  leadMs: number,
): JobStages[] {
  const started = new Map(starts);
  const sorted = [...events].sort((a, b) => a[1] - b[1]);
  const first = (kind: TraceKind, from: number, to: number) =>
    sorted.find(([k, t]) => k === kind && t >= from && t <= to)?.[1] ?? Number.NaN;
  const out: JobStages[] = [];
  for (const [seq, committed] of commits) {
    const start = started.get(seq);
    if (start === undefined) continue;
    const woken = first('notification', committed - leadMs, start);
    const sent = first('claim-sent', Number.isNaN(woken) ? committed - leadMs : woken, start);
    const replied = Number.isNaN(sent) ? Number.NaN : first('claim-reply', sent, start);
    out.push({
      seq,
      latencyMs: start - committed,
      wakeMs: woken - committed,
      toClaimMs: sent - woken,
      claimMs: replied - sent,
      toHandlerMs: start - replied,
    });
  }
  return out;
}

export interface StageSummary {
  jobs: number;
  latency: { p50: number; p90: number };
  stages: Record<Stage, { p50: number; p90: number; missing: number }>;
}

export function summarizeStages(jobs: readonly JobStages[]): StageSummary {
  const pcts = (xs: number[]) => {
    const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
    return { p50: percentile(s, 50), p90: percentile(s, 90), missing: xs.length - s.length };
  };
  const stages = Object.fromEntries(STAGES.map((k) => [k, pcts(jobs.map((j) => j[k]))])) as StageSummary['stages'];
  const { p50, p90 } = pcts(jobs.map((j) => j.latencyMs));
  return { jobs: jobs.length, latency: { p50, p90 }, stages };
}
