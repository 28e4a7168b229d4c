// What bench:ab measures and how it reports it: each figure of each ref run by run, and its
// ratio to the first ref, both as the ratio of medians and as the spread of per-round ratios
// (run i of every ref comes from round i, so rounds pair up).

import type { MachineRecord } from '../machine.ts';
import type { Figure } from '../scenarios/context.ts';
import { type Spread, spread } from '../stats.ts';

export interface AbScenario {
  id: string;
  kind: 'drain' | 'latency';
  variantId: string;
  /** Jobs drained, or latency samples per run. */
  jobs: number;
  /** Enqueues per second (latency). */
  rate?: number;
  /**
   * Drains: ANALYZE the database between the enqueue and the drain, as autovacuum leaves a
   * production table. A fresh table has no statistics, and some plan choices differ only with them.
   */
  analyze?: boolean;
  label: string;
}

/** The workloads: drains of a backlog enqueued up front, and start latency at a fixed rate. */
export const SCENARIOS: readonly AbScenario[] = [
  { id: 'drain-20k-notify', kind: 'drain', variantId: 'ab-notify', jobs: 20_000, label: '20k drain, notify, 200 slots' },
  { id: 'drain-100k-notify', kind: 'drain', variantId: 'ab-notify', jobs: 100_000, label: '100k drain, notify, 200 slots' },
  { id: 'drain-20k-poll', kind: 'drain', variantId: 'ab-poll', jobs: 20_000, label: '20k drain, poll, 200 slots' },
  { id: 'drain-20k-defaults', kind: 'drain', variantId: 'ab-defaults', jobs: 20_000, label: '20k drain, defaults, 10 slots' },
  {
    id: 'drain-20k-analyzed',
    kind: 'drain',
    variantId: 'ab-defaults',
    jobs: 20_000,
    analyze: true,
    label: '20k drain, defaults, 10 slots, analyzed table',
  },
  {
    id: 'latency-100',
    kind: 'latency',
    variantId: 'ab-defaults',
    jobs: 1_000,
    rate: 100,
    label: 'start latency at 100 jobs/s, defaults',
  },
  { id: 'latency-10', kind: 'latency', variantId: 'ab-defaults', jobs: 200, rate: 10, label: 'start latency at 10 jobs/s, defaults' },
];

export interface Ratio {
  /** Ratio of the medians (candidate / baseline). */
  ofMedians: number;
  /** Per-round ratios: median, min, max. */
  perRound: Spread;
}

export interface Comparison {
  scenario: string;
  /** Per ref (same order as the report's refs): each metric's values run by run and their median. */
  values: Array<Record<string, { runs: number[]; median: number; pooled?: number }>>;
  /** Per ref after the first: each metric's ratio to the first ref. */
  ratios: Array<Record<string, Ratio>>;
}

export interface AbReport {
  startedAt: string;
  finishedAt: string;
  command: string;
  machine: MachineRecord;
  loadAvgPerRound: number[][];
  loadAvgAtEnd: number[];
  rounds: number;
  warmup: boolean;
  refs: Array<{ given: string; sha: string; label: string; subject: string }>;
  scenarios: AbScenario[];
  /** figures[scenario][ref] */
  figures: Figure[][];
  comparisons: Comparison[];
  ok: boolean;
}

/**
 * Per drain: jobs/s, and the CPU each job cost the worker process and the server (µs/job), which
 * a busy machine disturbs far less than the rate: they attribute a change's cost to a side.
 */
const METRICS = { drain: ['jobsPerSec', 'workerCpuUsPerJob', 'pgCpuUsPerJob'], latency: ['p50', 'p99'] } as const;
const METRIC_NAMES: Record<string, string> = {
  jobsPerSec: 'jobs/s',
  workerCpuUsPerJob: 'worker CPU µs/job',
  pgCpuUsPerJob: 'PostgreSQL CPU µs/job',
  p50: 'p50 ms',
  p99: 'p99 ms',
};

/** Per-round values of a metric (NaN for a failed or missing run), counted rounds only. */
function perRound(f: Figure, metric: string): number[] {
  return f.runs.filter((r) => !r.warmup).map((r) => (r.ok ? (r.values[metric] ?? Number.NaN) : Number.NaN));
}

export function compare(s: AbScenario, figs: Figure[]): Comparison {
  const metrics = METRICS[s.kind];
  const values = figs.map((f) => {
    const out: Comparison['values'][number] = {};
    for (const m of metrics) {
      const runs = perRound(f, m);
      // Latency: the percentile of every counted sample pooled, next to the per-run median.
      const q = m === 'p50' ? 50 : m === 'p99' ? 99 : null;
      const pooled = q !== null ? (f.quantiles?.[q] ?? undefined) : undefined;
      out[m] = { runs, median: spread(runs).median, ...(pooled === undefined || pooled === null ? {} : { pooled }) };
    }
    return out;
  });
  const base = values[0]!;
  const ratios = values.slice(1).map((v) => {
    const out: Record<string, Ratio> = {};
    for (const m of metrics) {
      const pairs = v[m]!.runs.map((x, i) => x / base[m]!.runs[i]!);
      out[m] = { ofMedians: v[m]!.median / base[m]!.median, perRound: spread(pairs) };
    }
    return out;
  });
  return { scenario: s.id, values, ratios };
}

const fmt = (x: number, digits: number) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
const fmtVal = (metric: string, x: number) => (metric.endsWith('PerSec') || metric.endsWith('PerJob') ? fmt(x, 0) : fmt(x, 2));
const fmtRatio = (r: Ratio) =>
  `**${fmt(r.ofMedians, 3)}x** (rounds ${fmt(r.perRound.min, 2)}-${fmt(r.perRound.max, 2)}, median ${fmt(r.perRound.median, 3)})`;

export function renderAbMarkdown(r: AbReport): string {
  const base = r.refs[0]!;
  const lines: string[] = [];
  lines.push(`# bench:ab ${r.refs.map((x) => x.label).join(' vs ')}`, '');
  lines.push(`Command: \`${r.command}\``, '');
  lines.push(
    `Started ${r.startedAt}, finished ${r.finishedAt}. ${r.rounds} counted round(s)${r.warmup ? ' after one warm-up round' : ''}; in each round every scenario ran on every ref, the refs' order reversed every other round.`,
    '',
  );
  const m = r.machine;
  lines.push(`Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}, Node ${m.node}.`);
  lines.push(
    `PostgreSQL: ${m.postgres.version.split(' ').slice(0, 2).join(' ')}, ${m.postgres.source}; settings ${Object.entries(
      m.postgres.settings,
    )
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}.`,
  );
  lines.push(
    `Load average (1/5/15 min) at the start of each round: ${r.loadAvgPerRound.map((l) => l.join('/')).join('; ')}; at the end ${r.loadAvgAtEnd.join('/')}.`,
    '',
  );
  lines.push('Refs:', '');
  for (const x of r.refs) lines.push(`- \`${x.label}\` ${x.sha}: ${x.subject}`);
  lines.push('');
  lines.push(`Ratios are against \`${base.label}\`: above 1 is faster for jobs/s; for CPU per job and latency, above 1 costs more.`, '');
  lines.push('| figure | ref | run by run | median | ratio |', '|---|---|---|---:|---|');
  r.scenarios.forEach((s, si) => {
    const c = r.comparisons[si]!;
    for (const metric of METRICS[s.kind]) {
      r.refs.forEach((ref, k) => {
        const v = c.values[k]![metric]!;
        const name = `${s.label}: ${METRIC_NAMES[metric]}${v.pooled === undefined ? '' : ` (pooled ${fmt(v.pooled, 2)})`}`;
        const ratio = k === 0 ? '' : fmtRatio(c.ratios[k - 1]![metric]!);
        lines.push(
          `| ${k === 0 ? name : ''} | \`${ref.label}\` | ${v.runs.map((x) => fmtVal(metric, x)).join(', ')} | ${fmtVal(metric, v.median)} | ${ratio} |`,
        );
      });
    }
  });
  const failed = r.figures.flat().filter((f) => f.status !== 'ok');
  if (failed.length) {
    lines.push('', '## Runs that did not verify', '');
    for (const f of failed)
      lines.push(
        `- ${f.scenario} ${f.variantId}: ${f.runs
          .filter((x) => !x.ok)
          .map((x) => x.detail)
          .join('; ')}`,
      );
  }
  return `${lines.join('\n')}\n`;
}
