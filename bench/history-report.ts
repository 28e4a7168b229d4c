// The history bench's Markdown report (bench/history.ts): per mode, medians over rounds of the
// fresh and after-history figures and of their ratios within each run; the scrape times on an
// empty table and next to the history; the targets.

import type { DrainRun, HistoryReport, Mode, Phase, ScrapeRound } from './history.ts';

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const num = (x: number, digits = 0) => x.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const modeName = (m: Mode) => `retention ${m.retention ? 'on (0)' : 'off'}, autovacuum ${m.autovacuum ? 'on' : 'off'}`;
const sameMode = (a: Mode, b: Mode) => a.retention === b.retention && a.autovacuum === b.autovacuum;

function byMode(runs: DrainRun[]): Array<[Mode, DrainRun[]]> {
  const out: Array<[Mode, DrainRun[]]> = [];
  for (const r of runs) {
    const group = out.find(([m]) => sameMode(m, r.mode));
    if (group) group[1].push(r);
    else out.push([r.mode, [r]]);
  }
  return out;
}

function drainTables(runs: DrainRun[]): string[] {
  const lines = [
    '| Mode | runs | throughput fresh (jobs/s) | after | after / fresh | idle latency p50 fresh (ms) | after | after / fresh | p99 fresh | p99 after | vacuums of jobs during the run | retention catch-up before "after" (s) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const sizes = [
    '| Mode | table pages fresh | table pages after | rows after | claim index pages after | idle claim buffers fresh | idle claim buffers after | idle claim cost fresh | idle claim cost after |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const targets = ['| Mode | throughput after / fresh ≥ 0.90 | latency p50 after / fresh ≤ 1.5 |', '|---|---|---|'];
  for (const [mode, rs] of byMode(runs)) {
    const m = (f: (r: DrainRun) => number) => median(rs.map(f));
    const p = (k: keyof Phase, which: 'fresh' | 'after') => m((r) => r[which][k] ?? Number.NaN);
    const tput = m((r) => r.after.jobsPerSec / r.fresh.jobsPerSec);
    const lat = m((r) => r.after.latencyP50Ms / r.fresh.latencyP50Ms);
    lines.push(
      `| ${modeName(mode)} | ${rs.length} | ${num(p('jobsPerSec', 'fresh'))} | ${num(p('jobsPerSec', 'after'))} | ${num(tput, 2)} | ${num(p('latencyP50Ms', 'fresh'), 2)} | ${num(p('latencyP50Ms', 'after'), 2)} | ${num(lat, 2)} | ${num(p('latencyP99Ms', 'fresh'), 2)} | ${num(p('latencyP99Ms', 'after'), 2)} | ${num(m((r) => r.vacuums))} | ${num(
        m((r) => r.catchUpSeconds ?? Number.NaN),
        1,
      )} |`,
    );
    sizes.push(
      `| ${modeName(mode)} | ${num(p('tablePages', 'fresh'))} | ${num(p('tablePages', 'after'))} | ${num(p('rows', 'after'))} | ${num(p('claimIndexPages', 'after'))} | ${num(p('idleClaimBuffers', 'fresh'))} | ${num(p('idleClaimBuffers', 'after'))} | ${num(p('idleClaimCost', 'fresh'))} | ${num(p('idleClaimCost', 'after'))} |`,
    );
    targets.push(
      `| ${modeName(mode)} | ${num(tput, 2)}: ${tput >= 0.9 ? 'met' : '**missed**'} | ${num(lat, 2)}: ${lat <= 1.5 ? 'met' : '**missed**'} |`,
    );
  }
  return [...lines, '', ...sizes, '', '### Targets (medians of the per-run ratios)', '', ...targets];
}

function scrapeTable(scrapes: ScrapeRound[]): string[] {
  const lines = [
    '| Statistics | rounds | /metrics empty (ms) | /metrics with history (ms) | ratio | /api/queues empty (ms) | /api/queues with history (ms) | ratio | target ≤ 2x |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const analyzed of [false, true]) {
    const rs = scrapes.filter((s) => s.analyzed === analyzed);
    if (rs.length === 0) continue;
    const m = (f: (r: ScrapeRound) => number) => median(rs.map(f));
    const mr = m((r) => r.fullMetricsMs / r.emptyMetricsMs);
    const qr = m((r) => r.fullQueuesMs / r.emptyQueuesMs);
    lines.push(
      `| ${analyzed ? 'after ANALYZE' : 'before ANALYZE'} | ${rs.length} | ${num(
        m((r) => r.emptyMetricsMs),
        2,
      )} | ${num(
        m((r) => r.fullMetricsMs),
        2,
      )} | ${num(mr, 2)} | ${num(
        m((r) => r.emptyQueuesMs),
        2,
      )} | ${num(
        m((r) => r.fullQueuesMs),
        2,
      )} | ${num(qr, 2)} | ${mr <= 2 && qr <= 2 ? 'met' : '**missed**'} |`,
    );
  }
  return lines;
}

export function renderHistoryReport(r: HistoryReport): string {
  const mc = r.machine;
  const pgSettings = Object.entries(mc.postgres.settings)
    .filter(([k]) => k !== 'autovacuum')
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  const s = r.settings;
  const out = [
    '# What history costs',
    '',
    `Command: \`${r.command}\`, started ${r.startedAt.slice(0, 16).replace('T', ' ')} UTC, finished ${r.finishedAt.slice(0, 16).replace('T', ' ')} UTC.`,
    '',
    `- Machine: ${mc.cpuModel}, ${mc.cores} cores, ${mc.memoryGiB} GiB, ${mc.os}, Node ${mc.node}`,
    `- Load average (1/5/15 min) at start ${mc.loadAvgAtStart.join(' / ')}, at end ${r.loadAvgAtEnd.join(' / ')}${Math.max(...mc.loadAvgAtStart, ...r.loadAvgAtEnd) > mc.cores ? ' (above the core count: other work competed for the CPU)' : ''}`,
    `- Commit ${mc.gitCommit}${mc.gitDirty ? ' (working tree had uncommitted changes)' : ''}`,
    `- Server: ${mc.postgres.version.split(',')[0]}, ${mc.postgres.source}; the bench's own server, not the shared development server. Settings: ${pgSettings}. Autovacuum is switched per mode (ALTER SYSTEM and a reload), at PostgreSQL's defaults otherwise (naptime 1 min); the jobs table carries the per-table settings of migration 0009.`,
    '',
    '## Throughput and idle start latency, fresh and after a million jobs',
    '',
    `Per run: a fresh database; a drain of ${num(s.drainJobs!)} no-op jobs (enqueued up front by SQL, drained by one engine with 500 slots, start-up included) and ${num(s.latencyJobs!)} jobs one at a time into the idle queue (enqueue call to handler start, in the same process, ${LATENCY_NOTE}); then ${num(s.historyJobs!)} jobs through the engine in drains of ${num(s.chunk!)}; with retention on, an idle engine until retention has deleted the finished jobs the last drains left (each drain's engine stops at once, so without this the "after" drain would run beside the sweep of a quarter of a million leftovers, which the fresh one does not); then the same drain and latency again. Retention on means retention 0 for every finished state (deleted at the next sweep, sweeps back to back while a backlog remains); off keeps every job. Modes run in rounds, each mode once per round; ratios are taken within each run, then the median over rounds.`,
    '',
    ...(r.runs.length ? drainTables(r.runs) : ['(not run)']),
    '',
    `Idle claim buffers and cost: shared buffers one fair claim of 200 (the engine's default claim) read on the empty queue (EXPLAIN ANALYZE, BUFFERS), after the latency phase, and the planner's total cost for it (a session with JIT on compiles a statement whose cost is above jit_above_cost, 100,000 by default; the engine's sessions run with JIT off). Table pages: 8 kB pages of jobs; the table has fillfactor 50.`,
    '',
    '## /metrics and /api/queues next to ten million finished jobs',
    '',
    `Two databases on the same server: one with 1,000 pending jobs, one with the same and ${num(s.rows!)} finished jobs (one in 1,000 dead-lettered, the rest succeeded) inserted with generate_series, not run through the engine, and the counters of finished jobs set as the engine's statements would have. Each figure: the median of ${num(s.scrapes!)} requests through the HTTP app in-process (app.request, no socket), alternating the two paths, after a warm-up; rounds alternate the databases. The health gauges are cached for 5 s, so most scrapes read only the job counts.`,
    '',
    ...(r.scrapes.length ? scrapeTable(r.scrapes) : ['(not run)']),
    '',
  ];
  return `${out.join('\n')}\n`;
}

const LATENCY_NOTE = 'a gap of 10 ms between jobs';
