// Unit tests (no database) of the benchmarks page's generated block: it names the results
// file it came from, every system's version and options, and the server's settings.

import { describe, expect, it } from 'vitest';
import type { BenchReport } from '../../bench/main.ts';
import { pageBlock } from '../../bench/report/page.ts';
import { BATON_VARIANTS, GRAPHILE_VARIANTS, PGBOSS_VARIANTS } from '../../bench/systems/variants.ts';

function report(): BenchReport {
  const variants = [BATON_VARIANTS[0]!, GRAPHILE_VARIANTS[0]!, PGBOSS_VARIANTS[0]!];
  const tp = (id: string, median: number, scenario = 'throughput', runs: number[] = []) => ({
    scenario,
    variantId: id,
    label: id,
    status: 'ok' as const,
    params: { jobs: scenario === 'throughput' ? 100_000 : 20_000 },
    runs: runs.map((jobsPerSec) => ({ warmup: false, ok: true, detail: 'ok', values: { jobsPerSec } })),
    summary: { jobsPerSec: { median, min: median, max: median, runs: 3 } },
  });
  return {
    startedAt: '2026-12-05T10:00:00.000Z',
    finishedAt: '2026-12-05T10:40:00.000Z',
    loadAvgAtEnd: [1, 1, 1],
    command: 'npm run bench',
    args: { runs: 3, quick: false },
    machine: {
      cpuModel: 'AMD EPYC',
      cores: 2,
      memoryGiB: 23.5,
      os: 'Linux',
      node: 'v20.20.2',
      gitCommit: 'abcdef0123456789',
      gitDirty: false,
      loadAvgAtStart: [1, 1, 1],
      postgres: {
        source: 'started by the bench',
        version: 'PostgreSQL 15.20 (Debian)',
        tuned: { shared_buffers: '1GB', work_mem: '16MB' },
        settings: { shared_buffers: '1GB', fsync: 'on' },
      },
      systems: { baton: '0.1.0', 'graphile-worker': '0.18.0', 'pg-boss': '12.38.1' },
    },
    variants,
    figures: [
      tp('baton-notify-cir', 30_000, 'throughput-small', [30_000, 29_000, 31_000, 30_500]),
      tp('graphile-perf', 25_000, 'throughput-small', [25_000, 24_000, 26_000, 25_500]),
      tp('baton-notify-cir', 30_000, 'throughput', [30_000, 29_000, 31_000, 30_500]),
      // Two groups: two runs near 40k, two near 20k.
      tp('graphile-perf', 20_000, 'throughput', [40_000, 20_000, 41_000, 19_000]),
      tp('pgboss-perf', 10_000),
    ],
    micro: [],
    pgbench: [],
    missing: [],
    sqlProfile: [],
    interleaved: true,
    ok: true,
  };
}

describe('pageBlock', () => {
  it('says where the figures come from, with versions, options and server settings', () => {
    const text = pageBlock(report(), 'results/bench-2026-12-05-10-00.json').join('\n');
    expect(text).toContain('bench/report/page.ts results/bench-2026-12-05-10-00.json');
    expect(text).toContain('(../results/bench-2026-12-05-10-00.md)');
    expect(text).toContain('graphile-worker 0.18.0');
    expect(text).toContain('pg-boss 12.38.1');
    expect(text).toContain('Baton 0.1.0 at abcdef0123');
    expect(text).toContain('"localQueue":{"size":500}');
    expect(text).toContain('shared_buffers=1GB, work_mem=16MB');
  });

  it('gives each peer the throughput ratio of both drains, and judges the 1.5x target on the small one', () => {
    const text = pageBlock(report(), 'results/x.json').join('\n');
    expect(text).toMatch(/\| graphile-worker \(performance config\) \| 1\.20x \| 1\.50x \|/);
    expect(text).toMatch(/\| pg-boss [^|]* \| n\/a \| 3\.00x \|/);
    expect(text).toMatch(/throughput ≥ 1\.5x graphile-worker \(performance config\), drain of 20,000 \| 1\.20x[^|]*\| \*\*no\*\* \|/);
    expect(text).toMatch(/drain of 100,000 \(shown; [^|]*\| 1\.50x[^|]*two groups here \| n\/a \|/);
  });

  it('prints every run of every system and says when a peer ran in two groups', () => {
    const text = pageBlock(report(), 'results/x.json').join('\n');
    expect(text).toMatch(
      /\| Throughput, large backlog \(jobs\/s\) \| graphile-perf \| 40,000, 20,000, 41,000, 19,000 \| [^|]+ \| \*\*two groups\*\*: 19,000, 20,000 and 40,000, 41,000 \|/,
    );
    expect(text).toMatch(/\| Throughput, small backlog \(jobs\/s\) \| graphile-perf \| 25,000, 24,000, 26,000, 25,500 \| [^|]+ \| {2}\|/);
  });
});
