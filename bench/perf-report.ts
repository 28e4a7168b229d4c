// Where PostgreSQL's CPU goes in a drain, by the server's own functions: reads the `perf record`
// files BENCH_DRAIN_PERF=dir leaves (one per drain, the drain alone) for two builds and counts
// the server's samples by what each was under (planning, index inserts, triggers, ...), side
// by side. Samples, not time: compare builds that drained the same number of jobs.
// Usage: npx tsx bench/perf-report.ts <dirA> <dirB> [--label-a A] [--label-b B]

import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

/** A sample goes to the first bucket one of whose functions is on its stack. */
const BUCKETS: Array<[string, string[]]> = [
  ['backend start and exit', ['InitPostgres', 'proc_exit', 'BackendStartup']],
  ['commit', ['CommitTransaction', 'CommitTransactionCommand']],
  ['parse and analyze', ['pg_parse_query', 'parse_analyze_fixedparams', 'parse_analyze_varparams']],
  ['planning', ['pg_plan_queries', 'BuildCachedPlan', 'standard_planner']],
  ['executor start', ['standard_ExecutorStart']],
  ['executor finish and end (side CTEs, after triggers)', ['standard_ExecutorFinish', 'standard_ExecutorEnd']],
  ['row triggers (WHEN and queued events)', ['ExecARUpdateTriggers', 'ExecARInsertTriggers', 'ExecARDeleteTriggers']],
  ['index inserts', ['ExecInsertIndexTuples']],
  ['check constraints', ['ExecConstraints']],
  ['init plans (scalar subqueries)', ['ExecSetParamPlan']],
  ['heap update', ['heap_update']],
  ['scans', ['ExecScan', 'index_getnext_slot']],
  ['executor, other', ['standard_ExecutorRun']],
  ['protocol and other backend work', ['PostgresMain']],
  ['WAL writer, checkpointer, background writer', ['WalWriterMain', 'CheckpointerMain', 'BackgroundWriterMain']],
  ['autovacuum', ['AutoVacWorkerMain']],
];
const OTHER = 'not attributed';

interface Counts {
  buckets: Map<string, number>;
  comms: Map<string, number>;
  files: number;
}

function count(dir: string): Counts {
  const buckets = new Map<string, number>();
  const comms = new Map<string, number>();
  const files = readdirSync(dir).filter((f) => f.endsWith('.data'));
  for (const f of files) {
    const out = execFileSync('perf', ['script', '-i', path.join(dir, f), '-F', 'comm,ip,sym'], {
      encoding: 'utf8',
      maxBuffer: 1 << 30,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    for (const block of out.split('\n\n')) {
      const lines = block
        .trim()
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean);
      if (lines.length === 0) continue;
      const comm = lines[0]!.split(/\s+/)[0]!;
      comms.set(comm, (comms.get(comm) ?? 0) + 1);
      if (comm !== 'postgres') continue;
      const stack = new Set(lines.slice(1).map((l) => (l.split(/\s+/)[1] ?? '').split('+')[0]!));
      const bucket = BUCKETS.find(([, fns]) => fns.some((fn) => stack.has(fn)))?.[0] ?? OTHER;
      buckets.set(bucket, (buckets.get(bucket) ?? 0) + 1);
    }
  }
  return { buckets, comms, files: files.length };
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'label-a': { type: 'string', default: 'A' }, 'label-b': { type: 'string', default: 'B' } },
});
if (positionals.length !== 2) {
  console.error('usage: npx tsx bench/perf-report.ts <dirA> <dirB> [--label-a A] [--label-b B]');
  process.exit(2);
}
const [a, b] = positionals.map(count) as [Counts, Counts];
const la = values['label-a']!;
const lb = values['label-b']!;
const ratio = (x: number, y: number) => (x === 0 ? '-' : `${(y / x).toFixed(2)}x`);
const row = (name: string, x: number, y: number) => `| ${name} | ${x} | ${y} | ${y - x} | ${ratio(x, y)} |`;

const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
console.log(`\`npx tsx bench/perf-report.ts ${process.argv.slice(2).join(' ')}\`, ${new Date().toISOString().slice(0, 16)} UTC`);
console.log(
  `Machine: ${cpu}, ${os.cpus().length} cores, Linux ${os.release()}, Node ${process.version}; load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ')}`,
);
console.log(`Drains recorded: ${a.files} (${la}), ${b.files} (${lb}).\n`);
console.log(`| process | ${la} | ${lb} | ${lb} - ${la} | ${lb} / ${la} |\n|---|---:|---:|---:|---:|`);
for (const comm of ['postgres', 'node', 'swapper']) {
  console.log(row(comm === 'swapper' ? 'idle (swapper)' : comm, a.comms.get(comm) ?? 0, b.comms.get(comm) ?? 0));
}
console.log(`\nPostgreSQL's samples by what they were under:\n`);
console.log(`| under | ${la} | ${lb} | ${lb} - ${la} | ${lb} / ${la} |\n|---|---:|---:|---:|---:|`);
let ta = 0;
let tb = 0;
for (const name of [...BUCKETS.map(([n]) => n), OTHER]) {
  const x = a.buckets.get(name) ?? 0;
  const y = b.buckets.get(name) ?? 0;
  ta += x;
  tb += y;
  console.log(row(name, x, y));
}
console.log(row('**total**', ta, tb));
