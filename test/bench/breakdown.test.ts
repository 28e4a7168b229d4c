// Unit tests (no database) of the latency breakdown's matching: each job's stages come
// from the first traced event of each kind after its commit, a notification may
// overtake the producer's reply by up to the lead, and missing events show as NaN.

import { describe, expect, it } from 'vitest';
import type { TraceEvent } from '../../bench/child/pg-trace.ts';
import { jobStages, summarizeStages } from '../../bench/scenarios/breakdown.ts';

describe('jobStages', () => {
  it('splits each job into wake, claim sent, round trip and handler start', () => {
    const commits: Array<[number, number]> = [
      [0, 100],
      [1, 110],
    ];
    const starts: Array<[number, number]> = [
      [0, 101.5],
      [1, 112],
    ];
    const events: TraceEvent[] = [
      // Listed out of order: the trace is sorted before matching.
      ['claim-reply', 101.3],
      ['notification', 99.8],
      ['claim-sent', 100.1],
      ['notification', 110.2],
      ['claim-sent', 110.4],
      ['claim-reply', 111.9],
    ];
    const [a, b] = jobStages(commits, starts, events, 1);
    expect(a!.seq).toBe(0);
    expect(a!.latencyMs).toBeCloseTo(1.5);
    expect(a!.wakeMs).toBeCloseTo(-0.2);
    expect(a!.toClaimMs).toBeCloseTo(0.3);
    expect(a!.claimMs).toBeCloseTo(1.2);
    expect(a!.toHandlerMs).toBeCloseTo(0.2);
    expect(b!.wakeMs).toBeCloseTo(0.2);
    expect(b!.claimMs).toBeCloseTo(1.5);
  });

  it("never takes the previous job's events, and marks missing ones NaN", () => {
    // Job 1 was found by a poll: no notification of its own; the earlier one is outside the lead.
    const events: TraceEvent[] = [
      ['notification', 99.9],
      ['claim-sent', 100],
      ['claim-reply', 101],
      ['claim-sent', 150],
      ['claim-reply', 151],
    ];
    const [, poll] = jobStages(
      [
        [0, 100],
        [1, 110],
      ],
      [
        [0, 101.1],
        [1, 151.1],
      ],
      events,
      3,
    );
    expect(poll!.wakeMs).toBeNaN();
    expect(poll!.toClaimMs).toBeNaN();
    expect(poll!.claimMs).toBeCloseTo(1);
    expect(poll!.latencyMs).toBeCloseTo(41.1);
  });

  it('skips jobs that never started', () => {
    expect(jobStages([[0, 100]], [], [], 1)).toEqual([]);
  });
});

describe('summarizeStages', () => {
  it('reports percentiles over the jobs that have the stage and counts the rest', () => {
    const job = (seq: number, wakeMs: number) => ({ seq, latencyMs: seq, wakeMs, toClaimMs: 0.1, claimMs: 1, toHandlerMs: 0.1 });
    const s = summarizeStages([job(1, 0.5), job(2, Number.NaN), job(3, 0.3), job(4, 0.1)]);
    expect(s.jobs).toBe(4);
    expect(s.latency.p50).toBe(2);
    expect(s.stages.wakeMs).toEqual({ p50: 0.3, p90: 0.5, missing: 1 });
    expect(s.stages.claimMs.missing).toBe(0);
  });
});
