// The cron chaos checker must be able to fail: each rule is broken once here.

import { describe, expect, it } from 'vitest';
import { type CronJob, type CronSchedules, checkCron } from './cron-checker.ts';

const T = Date.parse('2026-01-01T00:00:00Z');
const W = { from: T, to: T + 9_000, thresholdMs: 2_000, marginMs: 300 };
const job = (id: string, at: number, lateMs = 5, state = 'succeeded'): CronJob => ({
  key: `cron:${id}:${new Date(at).toISOString()}`,
  runAt: at,
  createdAt: at + lateMs,
  state,
});
const seconds = (from: number, to: number) => Array.from({ length: (to - from) / 1000 + 1 }, (_, i) => from + i * 1000);

/** A run where the ticker stopped after 2 s and came back at 7.5 s: 3, 4 and 5 s are over the 2 s threshold (missed), 6 s is not. */
function outage(): CronSchedules {
  const late = (at: number) => (at >= T + 3_000 && at <= T + 6_000 ? T + 7_500 - at : 5);
  return {
    fire_all: { id: '1', jobs: seconds(T, T + 9_000).map((t) => job('1', t, late(t))) },
    fire_once: { id: '2', jobs: [...seconds(T, T + 2_000), ...seconds(T + 5_000, T + 9_000)].map((t) => job('2', t, late(t))) },
    skip: { id: '3', jobs: [...seconds(T, T + 2_000), ...seconds(T + 6_000, T + 9_000)].map((t) => job('3', t, late(t))) },
  };
}

describe('cron chaos checker', () => {
  it('passes a run that kept every policy', () => {
    const r = checkCron(outage(), W);
    expect(r.violations).toEqual([]);
    expect(r.missed).toBe(3);
  });

  it('fails a fire_all occurrence with no job, or with two', () => {
    const s = outage();
    s.fire_all.jobs.splice(4, 1);
    expect(checkCron(s, W).violations).toEqual(['fire_all: occurrence 2026-01-01T00:00:04.000Z has no job']);
    const d = outage();
    d.fire_all.jobs.push(job('1', T + 1_000));
    expect(checkCron(d, W).violations).toEqual(['fire_all: occurrence 2026-01-01T00:00:01.000Z has two jobs']);
  });

  it('fails a skip schedule that fired a missed occurrence, or dropped an on-time one', () => {
    const s = outage();
    s.skip.jobs.push(job('3', T + 4_000, 3_500));
    expect(checkCron(s, W).violations).toEqual([
      'skip: occurrence 2026-01-01T00:00:04.000Z was fired 3500 ms late (past the 2000 ms threshold)',
    ]);
    const d = outage();
    d.skip.jobs.splice(1, 1);
    expect(checkCron(d, W).violations).toEqual(['skip: occurrence 2026-01-01T00:00:01.000Z was reached on time (5 ms) but has no job']);
  });

  it('fails a fire_once schedule whose missed run is not ended by a catch-up', () => {
    const s = outage();
    s.fire_once.jobs = s.fire_once.jobs.filter((j) => j.runAt !== T + 5_000);
    expect(checkCron(s, W).violations).toEqual([
      'fire_once: occurrences 2026-01-01T00:00:03.000Z..2026-01-01T00:00:05.000Z have no job, and the next job (2026-01-01T00:00:06.000Z) is no catch-up (1500 ms late)',
    ]);
  });

  it('fails a job that is not for an occurrence, or did not succeed', () => {
    const s = outage();
    s.fire_all.jobs[0] = { ...job('1', T), runAt: T + 500, key: `cron:1:${new Date(T + 500).toISOString()}` };
    s.fire_all.jobs[1] = job('1', T + 1_000, 5, 'dead_lettered');
    const v = checkCron(s, W).violations;
    expect(v).toContain('fire_all: job cron:1:2026-01-01T00:00:00.500Z is not for an occurrence (not a whole second)');
    expect(v).toContain('fire_all: job cron:1:2026-01-01T00:00:01.000Z ended dead_lettered');
  });
});
