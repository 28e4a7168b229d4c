// results/bench-<date>.md: the tables a reader needs (modes side by side, peers side
// by side, ratios), generated from the JSON report only; no figure is typed by hand.

import type { BenchReport } from '../main.ts';
import type { Figure } from '../scenarios/context.ts';
import { bimodal } from '../stats.ts';
import { num, ratio } from './format.ts';
import { cell, configurationLines, fig, machineLines, summaryTable } from './headline.ts';

const SCENARIO_TITLES: Record<string, string> = {
  'throughput-small': 'Throughput, small backlog',
  throughput: 'Throughput, large backlog',
  latency: 'Start latency',
  'latency-sparse': 'Start latency, sparse',
  'latency-http': 'Start latency via HTTP',
  'recovery-fast': 'kill -9 recovery, fast reclaim on',
  'recovery-lease': 'kill -9 recovery, fast reclaim off',
};

function statusNote(f: Figure): string {
  if (f.status === 'failed') return `FAILED: ${f.runs.find((x) => !x.warmup && !x.ok)?.detail ?? ''}`;
  return f.note ?? '';
}

export function throughputTable(r: BenchReport, scenario: 'throughput' | 'throughput-small', out: string[]): void {
  const figs = r.figures.filter((f) => f.scenario === scenario);
  if (!figs.length) return;
  const ref = figs.find((f) => f.variantId === 'graphile-perf');
  const p = figs[0]!.params as { jobs: number };
  out.push(`## ${SCENARIO_TITLES[scenario]} (${p.jobs.toLocaleString('en-US')} no-op jobs enqueued up front, drained by one process)`, '');
  out.push(
    'CPU per job: the worker process (the system under test, plus the harness\'s in-process checks) and every postgres process on this host, over the drain, divided by the jobs done (microseconds; "n/a" where /proc is unreadable). GC pauses: the worker\'s garbage-collection pauses over the drain (wall time on its main thread, part of its CPU), per job.',
    '',
  );
  out.push(
    '| System / mode | jobs/s | drain time (ms) | worker CPU (µs/job) | of which GC pauses (µs/job) | PostgreSQL CPU (µs/job) | enqueue jobs/s | vs graphile-worker perf | notes |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|',
  );
  for (const f of figs) {
    out.push(
      `| ${f.label} | ${cell(f, 'jobsPerSec', 0)} | ${cell(f, 'elapsedMs', 0)} | ${cell(f, 'workerCpuUsPerJob', 1)} | ${cell(f, 'workerGcUsPerJob', 1)} | ${cell(f, 'pgCpuUsPerJob', 1)} | ${cell(f, 'enqueuePerSec', 0)} | ${
        f.status === 'ok' && ref?.status === 'ok' ? ratio(f.summary.jobsPerSec?.median, ref.summary.jobsPerSec?.median) : '—'
      } | ${statusNote(f)} |`,
    );
  }
  out.push('');
}

/**
 * Every counted run of every system, in round order, for the figures a comparison rests on: a
 * median over few runs hides a system whose runs fall into two groups, so such a figure says so.
 */
export function runsTable(r: BenchReport, out: string[]): void {
  const rows: Array<[string, string, number | undefined]> = [
    ['throughput-small', 'jobsPerSec', 0],
    ['throughput', 'jobsPerSec', 0],
    ['latency', 'p99', undefined],
    ['latency-sparse', 'p99', undefined],
  ];
  const figs = rows.flatMap(([sc, key, digits]) =>
    r.figures.filter((f) => f.scenario === sc && f.status === 'ok').map((f) => ({ f, key, digits })),
  );
  if (!figs.length) return;
  out.push(
    '## Every run',
    '',
    `Each counted run in round order (${r.interleaved ? 'run i of every system comes from round i' : 'not interleaved'}). "Two groups": the sorted runs split at a step of 1.3x or more with two runs or more on each side, so the median tells which group was larger, not what the system does.`,
    '',
    '| Figure | System / mode | runs | median | |',
    '|---|---|---|---:|---|',
  );
  for (const { f, key, digits } of figs) {
    const values = f.runs.filter((x) => !x.warmup).map((x) => x.values[key] ?? Number.NaN);
    const split = bimodal(values);
    const groups = split
      ? `**two groups**: ${split.low.map((x) => num(x, digits)).join(', ')} and ${split.high.map((x) => num(x, digits)).join(', ')}`
      : '';
    out.push(
      `| ${SCENARIO_TITLES[f.scenario]} ${key === 'jobsPerSec' ? '(jobs/s)' : `${key} (ms)`} | ${f.label} | ${values.map((x) => num(x, digits)).join(', ')} | ${num(f.summary[key]?.median ?? Number.NaN, digits)} | ${groups} |`,
    );
  }
  out.push('');
}

export function latencyTable(r: BenchReport, scenario: string, out: string[]): void {
  const figs = r.figures.filter((f) => f.scenario === scenario);
  if (!figs.length) return;
  const p = figs[0]!.params as { rate: number; jobs: number; via: string };
  out.push(
    `## ${SCENARIO_TITLES[scenario]} (${p.rate} jobs/s for ${p.jobs} jobs, producer in another process${p.via === 'http' ? ', POST /api/jobs over undici keep-alive' : ''})`,
    '',
    'Latency = handler start − enqueue commit (ms). Each cell: median of the runs (min–max).',
    '',
    '| System / mode | wake-up | poll interval | p50 | p95 | p99 | max | notes |',
    '|---|---|---:|---:|---:|---:|---:|---|',
  );
  for (const f of figs) {
    const v = r.variants.find((x) => x.id === f.variantId);
    out.push(
      `| ${f.label} | ${v?.notify ? 'NOTIFY' : 'poll only'} | ${v ? `${v.pollIntervalMs} ms` : ''} | ${cell(f, 'p50')} | ${cell(f, 'p95')} | ${cell(f, 'p99')} | ${cell(f, 'max')} | ${statusNote(f)} |`,
    );
  }
  out.push('');
}

export function recoveryTable(r: BenchReport, out: string[]): void {
  const figs = r.figures.filter((f) => f.scenario.startsWith('recovery'));
  if (!figs.length) return;
  const p = figs[0]!.params as { jobs: number; leaseMs: number; firstAttemptSleepMs: number };
  out.push(
    `## kill -9 recovery (${p.jobs} in-flight jobs, each sleeping ${p.firstAttemptSleepMs} ms on its first attempt; lease ${p.leaseMs} ms)`,
    '',
    'Times from the SIGKILL (ms). "all re-started": the last job started on the second process; "all succeeded": its success was recorded.',
    '',
    '| Mode | fast reclaim | first re-start | all re-started | all succeeded | lease | notes |',
    '|---|---|---:|---:|---:|---:|---|',
  );
  for (const f of figs) {
    out.push(
      `| ${f.label} | ${f.scenario === 'recovery-fast' ? 'on' : 'off'} | ${cell(f, 'firstRestartMs', 0)} | ${cell(f, 'restartMs', 0)} | ${cell(f, 'doneMs', 0)} | ${p.leaseMs} | ${statusNote(f)} |`,
    );
  }
  out.push('');
}

export function modesMatrix(r: BenchReport, out: string[]): void {
  const modes = r.variants.filter((v) => v.system === 'baton');
  if (!modes.length) return;
  out.push(
    '## Baton modes side by side',
    '',
    `| Figure | ${modes.map((m) => m.label.replace('Baton ', '')).join(' | ')} |`,
    `|---|${modes.map(() => '---:').join('|')}|`,
  );
  const rows: Array<[string, string, string, number | undefined]> = [
    ['throughput, small backlog (jobs/s)', 'throughput-small', 'jobsPerSec', 0],
    ['throughput, large backlog (jobs/s)', 'throughput', 'jobsPerSec', 0],
    ['latency p50 (ms)', 'latency', 'p50', undefined],
    ['latency p99 (ms)', 'latency', 'p99', undefined],
    ['sparse latency p50 (ms)', 'latency-sparse', 'p50', undefined],
    ['sparse latency p99 (ms)', 'latency-sparse', 'p99', undefined],
    ['HTTP latency p50 (ms)', 'latency-http', 'p50', undefined],
    ['HTTP latency p99 (ms)', 'latency-http', 'p99', undefined],
    ['kill -9, fast reclaim: all succeeded (ms)', 'recovery-fast', 'doneMs', 0],
    ['kill -9, lease only: all succeeded (ms)', 'recovery-lease', 'doneMs', 0],
  ];
  for (const [title, sc, key, digits] of rows) {
    if (!modes.some((m) => fig(r, sc, m.id))) continue;
    out.push(`| ${title} | ${modes.map((m) => cell(fig(r, sc, m.id), key, digits)).join(' | ')} |`);
  }
  out.push('');
}

export function peersRatios(r: BenchReport, out: string[]): void {
  const baton = 'baton-notify-cir';
  const peers = r.variants.filter((v) => v.system !== 'baton');
  if (!peers.length || !r.variants.some((v) => v.id === baton)) return;
  out.push(
    '## Ratios: Baton (notify, claimIntoRunning on) against each peer',
    '',
    'Throughput: Baton / peer (above 1 = Baton faster). Latency: peer / Baton (above 1 = Baton lower). Medians only: see "Every run" for how each spreads.',
    '',
    '| Peer | throughput, small backlog | throughput, large backlog | latency p50 | latency p99 | sparse p50 | sparse p99 |',
    '|---|---:|---:|---:|---:|---:|---:|',
  );
  const m = (sc: string, id: string, k: string) => {
    const f = fig(r, sc, id);
    return f?.status === 'ok' ? f.summary[k]?.median : undefined;
  };
  for (const p of peers) {
    out.push(
      `| ${p.label} | ${ratio(m('throughput-small', baton, 'jobsPerSec'), m('throughput-small', p.id, 'jobsPerSec'))} | ${ratio(m('throughput', baton, 'jobsPerSec'), m('throughput', p.id, 'jobsPerSec'))} | ${ratio(m('latency', p.id, 'p50'), m('latency', baton, 'p50'))} | ${ratio(m('latency', p.id, 'p99'), m('latency', baton, 'p99'))} | ${ratio(m('latency-sparse', p.id, 'p50'), m('latency-sparse', baton, 'p50'))} | ${ratio(m('latency-sparse', p.id, 'p99'), m('latency-sparse', baton, 'p99'))} |`,
    );
  }
  out.push('');
}

export function microAndCeiling(r: BenchReport, out: string[]): void {
  if (r.micro.length) {
    out.push(
      "## Micro-benchmarks (tinybench, through the engine's executor)",
      '',
      '| Statement | batch | ops/s | rows/s | mean (ms) | p99 (ms) | samples |',
      '|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const m of r.micro)
      out.push(
        `| ${m.name} | ${m.batch} | ${num(m.opsPerSec, 0)} | ${num(m.rowsPerSec, 0)} | ${num(m.meanMs, 3)} | ${num(m.p99Ms, 3)} | ${m.samples} |`,
      );
    out.push('');
  }
  if (r.pgbench.length) {
    const tp = fig(r, 'throughput', 'baton-notify-cir');
    const batonTp = tp?.status === 'ok' ? tp.summary.jobsPerSec?.median : undefined;
    out.push(
      "## The database's own ceiling (pgbench: claim then complete, same statements, same server)",
      '',
      '| Script | batch | clients | transactions | tps | jobs/s | Baton notify/cir as share |',
      '|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const p of r.pgbench) {
      out.push(
        `| ${p.name} | ${p.batch} | ${p.clients} | ${p.transactions} | ${num(p.tps, 0)} | ${num(p.jobsPerSec, 0)} | ${batonTp && p.batch > 1 ? `${((batonTp / p.jobsPerSec) * 100).toFixed(0)}%` : '—'} |`,
      );
    }
    out.push('');
  }
}

export function renderMarkdown(r: BenchReport, svgFile: string): string {
  const out: string[] = [
    `# Baton benchmark, ${r.startedAt.slice(0, 10)}`,
    '',
    `Command: \`${r.command}\` (started ${r.startedAt}, finished ${r.finishedAt}).`,
    `Status: ${r.ok ? 'every counted run verified against the database' : '**some runs failed verification; their figures are not shown**'}.`,
    '',
    `![latency distributions and throughput](${svgFile})`,
    '',
    '## Machine and server',
    '',
    ...machineLines(r),
    `- Runs: each figure is the median of ${String(r.args.runs)} run(s) after ${r.args.quick ? 'no' : 'one discarded'} warm-up run, spread shown as (min–max); every run has its own fresh database.${r.interleaved ? ' Throughput and latency ran in rounds: each round ran every system once, one at a time, alternating the order between rounds, so run i of every system comes from round i.' : ''}`,
    '',
    '## Configurations',
    '',
    ...configurationLines(r),
    '',
    '## Summary',
    '',
  ];
  summaryTable(r, out);
  targetsTable(r, out);
  modesMatrix(r, out);
  throughputTable(r, 'throughput-small', out);
  throughputTable(r, 'throughput', out);
  runsTable(r, out);
  latencyTable(r, 'latency', out);
  latencyTable(r, 'latency-sparse', out);
  latencyTable(r, 'latency-http', out);
  peersRatios(r, out);
  recoveryTable(r, out);
  microAndCeiling(r, out);
  if (r.sqlProfile?.length) {
    out.push(
      '## Server time by statement (pg_stat_statements, --profile-sql)',
      '',
      'Execution time; planning (track_planning) beside it: a named statement whose plan is cached is planned far fewer times than called.',
      '',
      '| calls | total (ms) | mean (ms) | plans | planning (ms) | rows | statement |',
      '|---:|---:|---:|---:|---:|---:|---|',
    );
    for (const q of r.sqlProfile)
      out.push(
        `| ${q.calls} | ${num(q.totalMs, 0)} | ${num(q.meanMs, 3)} | ${q.plans ?? '—'} | ${q.planMs === undefined ? '—' : num(q.planMs, 0)} | ${q.rows} | \`${q.query.replace(/\|/g, '\\|').replace(/`/g, "'")}\` |`,
      );
    out.push('');
  }
  if (r.missing.length) out.push('## Not measured in this run', '', ...r.missing.map((x) => `- ${x}`), '');
  const failed = r.figures.filter((f) => f.status === 'failed');
  if (failed.length) {
    out.push('## Failed runs (not reported as figures)', '');
    for (const f of failed)
      for (const run of f.runs.filter((x) => !x.ok))
        out.push(`- ${f.scenario} / ${f.label}${run.warmup ? ' (warm-up)' : ''}: ${run.detail}`);
    out.push('');
  }
  return `${out.join('\n')}\n`;
}

/** The performance targets, each with the measured medians and whether this run meets it. */
export function targetsTable(r: BenchReport, out: string[]): void {
  const med = (sc: string, id: string, k: string) => {
    const x = fig(r, sc, id);
    return x?.status === 'ok' ? x.summary[k]?.median : undefined;
  };
  const b = 'baton-notify-cir';
  // Runs in rounds pair up: in how many rounds did Baton meet the target against that round's peer run?
  const rounds = (sc: string, k: string, meets: (mine: number, peer: number) => boolean) => {
    if (!r.interleaved) return '';
    const runsOf = (id: string) => fig(r, sc, id)?.runs.filter((x) => !x.warmup) ?? [];
    const mine = runsOf(b);
    const peer = runsOf('graphile-perf');
    if (!mine.length || mine.length !== peer.length) return '';
    const won = mine.filter((x, i) => x.ok && peer[i]!.ok && meets(x.values[k]!, peer[i]!.values[k]!)).length;
    return `; met in ${won} of ${mine.length} rounds`;
  };
  const rows: Array<[string, string, boolean | undefined]> = [];
  // Judged on the small drain, where every system's runs are stable; the large one is shown
  // beside it with a note when a system's runs fall into two groups there.
  for (const sc of ['throughput-small', 'throughput'] as const) {
    const mine = med(sc, b, 'jobsPerSec');
    const peer = med(sc, 'graphile-perf', 'jobsPerSec');
    if (mine === undefined || peer === undefined) continue;
    const jobs = Number(fig(r, sc, b)?.params.jobs ?? 0).toLocaleString('en-US');
    const split = bimodal(
      fig(r, sc, 'graphile-perf')
        ?.runs.filter((x) => !x.warmup)
        .map((x) => x.values.jobsPerSec ?? Number.NaN) ?? [],
    );
    rows.push([
      `throughput ≥ 1.5x graphile-worker (performance config), drain of ${jobs}${sc === 'throughput' ? ' (shown; the target is judged on the small drain)' : ''}`,
      `${ratio(mine, peer)}${rounds(sc, 'jobsPerSec', (x, y) => x >= 1.5 * y)}${split ? '; graphile-worker ran in two groups here' : ''}`,
      sc === 'throughput' ? undefined : mine >= 1.5 * peer,
    ]);
  }
  const tp = med('throughput', b, 'jobsPerSec');
  const ceiling = Math.max(0, ...r.pgbench.filter((p) => p.batch === 50).map((p) => p.jobsPerSec));
  if (tp !== undefined && ceiling > 0)
    rows.push([
      'throughput ≥ 80% of the pgbench batch-50 ceiling (best client count)',
      `${((tp / ceiling) * 100).toFixed(0)}% of ${num(ceiling, 0)} jobs/s`,
      tp >= 0.8 * ceiling,
    ]);
  for (const [sc, name] of [
    ['latency', 'latency'],
    ['latency-sparse', 'sparse latency'],
  ] as const) {
    for (const k of ['p50', 'p99']) {
      const mine = med(sc, b, k);
      const peer = med(sc, 'graphile-perf', k);
      if (mine !== undefined && peer !== undefined)
        rows.push([
          `notify ${name} ${k} ≤ graphile-worker (performance config)`,
          `${num(mine)} ms vs ${num(peer)} ms${rounds(sc, k, (x, y) => x <= y)}`,
          mine <= peer,
        ]);
    }
  }
  const fast = Math.max(...r.variants.filter((v) => v.system === 'baton').map((v) => med('recovery-fast', v.id, 'doneMs') ?? Number.NaN));
  if (Number.isFinite(fast)) rows.push(['kill -9 recovery with fast reclaim < 1.5 s (worst mode)', `${num(fast, 0)} ms`, fast < 1_500]);
  const slow = Math.max(...r.variants.filter((v) => v.system === 'baton').map((v) => med('recovery-lease', v.id, 'doneMs') ?? Number.NaN));
  if (Number.isFinite(slow))
    rows.push(['kill -9 recovery without fast reclaim ≤ lease + 1 s (worst mode)', `${num(slow, 0)} ms (lease 5,000 ms)`, slow <= 6_000]);
  for (const v of r.variants.filter((x) => x.system === 'baton' && !x.notify)) {
    const p50 = med('latency', v.id, 'p50');
    if (p50 !== undefined)
      rows.push([
        `${v.label}: p50 explained by the poll interval (≈ interval / 2)`,
        `p50 ${num(p50)} ms, interval ${v.pollIntervalMs} ms`,
        p50 <= v.pollIntervalMs * 0.6,
      ]);
  }
  if (!rows.length) return;
  out.push('## Targets against this run', '', '| Target | measured (medians) | met |', '|---|---|---|');
  for (const [t, m, ok] of rows) out.push(`| ${t} | ${m} | ${ok === undefined ? 'n/a' : ok ? 'yes' : '**no**'} |`);
  out.push('');
}
