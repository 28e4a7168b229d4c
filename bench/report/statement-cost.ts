// `npx tsx bench/report/statement-cost.ts A.json B.json ...`: from --profile-sql runs of the
// throughput drain (one per commit), the server time a drained job spent in each kind of
// statement (enqueue, claim, completion), run by run, and its ratio to the first file. The
// rest (the harness's own checks among it) is left out. The time is execution only
// (pg_stat_statements' total_exec_time); `--per-call` also prints, file by file, the claim's and
// the completion's execution and planning per call, and each commit's median of their sum.
// Each run has its own database, so a database's statements are one run's.

import { readFileSync } from 'node:fs';
import type { BenchReport } from '../main.ts';
import { spread } from '../stats.ts';

const KINDS = ['enqueue', 'claim', 'complete', 'other'] as const;
type Kind = (typeof KINDS)[number];

function kindOf(query: string): Kind {
  if (/^INSERT INTO "[^"]+"\.jobs/.test(query)) return 'enqueue';
  if (query.startsWith('WITH w AS (UPDATE') && query.includes('finished_at = now()')) return 'complete';
  // The text is cut at 240 characters: the claims are told by how they begin.
  if (/^WITH (picked AS|top AS|solo AS|RECURSIVE hi)/.test(query)) return 'claim';
  return 'other';
}

/** Per run (database): jobs enqueued and µs of server time per job by kind. Runs without all of their statements in the profile are left out. */
function perRun(r: BenchReport): Array<{ jobs: number; us: Record<Kind, number> }> {
  const byDb = new Map<string, Record<Kind, number> & { jobs: number }>();
  for (const q of r.sqlProfile ?? []) {
    if (!q.database) continue;
    const e = byDb.get(q.database) ?? { jobs: 0, enqueue: 0, claim: 0, complete: 0, other: 0 };
    const k = kindOf(q.query);
    e[k] += q.totalMs;
    if (k === 'enqueue') e.jobs += q.rows;
    byDb.set(q.database, e);
  }
  return [...byDb.values()]
    .filter((e) => e.jobs > 0 && e.claim > 0 && e.complete > 0)
    .map((e) => ({ jobs: e.jobs, us: Object.fromEntries(KINDS.map((k) => [k, (e[k] * 1000) / e.jobs])) as Record<Kind, number> }));
}

/** Calls, execution and planning (ms) of one kind over every run of a report. */
function callTotals(r: BenchReport, kind: Kind): { calls: number; execMs: number; planMs: number } {
  const t = { calls: 0, execMs: 0, planMs: 0 };
  for (const q of r.sqlProfile ?? []) {
    if (!q.database || kindOf(q.query) !== kind) continue;
    t.calls += q.calls;
    t.execMs += q.totalMs;
    t.planMs += q.planMs ?? 0;
  }
  return t;
}

const perCall = process.argv.includes('--per-call');
const files = process.argv.slice(2).filter((a) => a !== '--per-call');
if (files.length === 0) {
  console.error('usage: npx tsx bench/report/statement-cost.ts [--per-call] <bench.json> [<bench.json> ...]');
  process.exit(2);
}
const reports = files.map((f) => ({ file: f, r: JSON.parse(readFileSync(f, 'utf8')) as BenchReport }));
const commitOf = (r: BenchReport) => (r.machine.batonBuild?.commit ?? r.machine.gitCommit).slice(0, 7);
const sizes = [...new Set(reports.flatMap(({ r }) => perRun(r).map((x) => x.jobs)))].sort((a, b) => b - a);
const lines = ['| drain | statement | commit | µs per job, run by run | median | ratio |', '|---|---|---|---|---:|---:|'];
for (const jobs of sizes) {
  for (const kind of KINDS.filter((k) => k !== 'other')) {
    let base: number | null = null;
    for (const { r } of reports) {
      const runs = perRun(r)
        .filter((x) => x.jobs === jobs)
        .map((x) => x.us[kind]);
      if (runs.length === 0) continue;
      const median = spread(runs).median;
      base ??= median;
      lines.push(
        `| ${jobs.toLocaleString('en-US')} | ${kind} | \`${commitOf(r)}\` | ${runs.map((x) => x.toFixed(1)).join(', ')} | ${median.toFixed(1)} | ${(median / base).toFixed(2)}x |`,
      );
    }
  }
}
if (perCall) {
  lines.push(
    '',
    '| statement | commit | file | calls | execution µs/call | planning µs/call | both |',
    '|---|---|---|---:|---:|---:|---:|',
  );
  for (const kind of ['claim', 'complete'] as const) {
    const sums = new Map<string, number[]>();
    for (const { file, r } of reports) {
      const t = callTotals(r, kind);
      if (t.calls === 0) continue;
      const [exec, plan] = [(t.execMs * 1000) / t.calls, (t.planMs * 1000) / t.calls];
      const commit = commitOf(r);
      sums.set(commit, sums.get(commit) ?? []);
      sums.get(commit)!.push(exec + plan);
      lines.push(
        `| ${kind} | \`${commit}\` | ${file} | ${t.calls} | ${exec.toFixed(0)} | ${plan.toFixed(0)} | ${(exec + plan).toFixed(0)} |`,
      );
    }
    for (const [commit, v] of sums)
      lines.push(`| ${kind} | \`${commit}\` | median of ${v.length} | | | | ${spread(v).median.toFixed(0)} |`);
  }
}
console.log(lines.join('\n'));
