// `npx tsx bench/report/statement-cost.ts A.json B.json ...`: from --profile-sql runs of the
// throughput drain (one per commit), the server time a drained job spent in each kind of
// statement (enqueue, claim, completion), run by run, and its ratio to the first file. The
// rest (the harness's own checks among it) is left out.
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

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: npx tsx bench/report/statement-cost.ts <bench.json> [<bench.json> ...]');
  process.exit(2);
}
const reports = files.map((f) => ({ file: f, r: JSON.parse(readFileSync(f, 'utf8')) as BenchReport }));
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
      const commit = (r.machine.batonBuild?.commit ?? r.machine.gitCommit).slice(0, 7);
      lines.push(
        `| ${jobs.toLocaleString('en-US')} | ${kind} | \`${commit}\` | ${runs.map((x) => x.toFixed(1)).join(', ')} | ${median.toFixed(1)} | ${(median / base).toFixed(2)}x |`,
      );
    }
  }
}
console.log(lines.join('\n'));
