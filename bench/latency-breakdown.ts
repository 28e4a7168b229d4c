// Where a notify-mode start latency goes, stage by stage, for Baton and its peers: the
// latency workload of the harness (producer in its own process, fixed rate) with the
// worker's pg client traced (child/pg-trace.ts). Systems run in rounds, alternating the
// order, like `npm run bench`. Diagnostics only: nothing here enters results/.
// `--refs a,b` runs Baton's systems once per commit (built as bench:ab builds them), interleaved
// in each round, and prints each stage's p50 against the first commit's.
// Usage: npx tsx bench/latency-breakdown.ts [--systems baton-notify-cir,graphile-perf]
//          [--refs fc86693,HEAD] [--rate 100] [--jobs 1000] [--runs 3] [--tail 0]

import { parseArgs } from 'node:util';
import { abCacheDir, buildRef } from './ab/build.ts';
import { type JobStages, jobStages, STAGES, type StageSummary, summarizeStages } from './scenarios/breakdown.ts';
import { latencyRun } from './scenarios/latency.ts';
import { openServer, type PgServer } from './server.ts';
import { spread } from './stats.ts';
import { variantById } from './systems/variants.ts';

const { values } = parseArgs({
  options: {
    systems: { type: 'string', default: 'baton-notify-cir,graphile-perf' },
    rate: { type: 'string', default: '100' },
    jobs: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '3' },
    tail: { type: 'string', default: '0' },
    refs: { type: 'string' },
  },
});
const ids = values.systems.split(',').map((s) => variantById(s.trim()).id);
const refs = values.refs ? values.refs.split(',').map((r) => buildRef(r.trim(), abCacheDir(), (m) => process.stderr.write(`${m}\n`))) : [];

/** One system as run: a peer, or Baton as this tree has it or as one of --refs built it. */
interface System {
  key: string;
  variantId: string;
  /** The commit a Baton system runs (--refs), as the child processes' BENCH_BATON_LIB. */
  env?: Record<string, string>;
  /** The first ref's key for the same variant, to compare against. */
  base?: string;
}
const systems: System[] = ids.flatMap((id): System[] => {
  if (refs.length === 0 || variantById(id).system !== 'baton') return [{ key: id, variantId: id }];
  return refs.map((r) => ({ key: `${id}@${r.label}`, variantId: id, env: { BENCH_BATON_LIB: r.entry }, base: `${id}@${refs[0]!.label}` }));
});
const width = Math.max(18, ...systems.map((s) => s.key.length));
const [rate, jobs, runs, tail] = [values.rate, values.jobs, values.runs, values.tail].map(Number) as [number, number, number, number];
// The first jobs of a run pay for connections and plans being made.
const WARM_JOBS = Math.min(10, Math.floor(jobs / 10));

async function tracedRun(server: PgServer, system: System, round: number, at: number): Promise<JobStages[]> {
  const name = `bench_breakdown_${process.pid}_${round}_${at}`;
  const url = await server.createDatabase(name);
  try {
    const { variantId, env } = system;
    const { p, w } = await latencyRun(url, { variantId, rate, jobs, via: 'library', trace: true, env });
    if (!w.verify.ok) throw new Error(`${system.key}: run failed verification: ${w.verify.detail}`);
    const counted = p.commits.filter(([seq]) => seq >= WARM_JOBS);
    return jobStages(counted, w.starts, w.trace ?? [], Math.min(3, 1000 / rate / 3));
  } finally {
    await server.dropDatabase(name);
  }
}

const ms = (x: number) => (Number.isNaN(x) ? '   -  ' : x.toFixed(3).padStart(6));
const line = (s: StageSummary) =>
  `latency ${ms(s.latency.p50)} /${ms(s.latency.p90)}  ` +
  STAGES.map((k) => `${k.replace('Ms', '')} ${ms(s.stages[k].p50)} /${ms(s.stages[k].p90)}`).join('  ');

const server = await openServer();
const summaries = new Map<string, StageSummary[]>(systems.map((s) => [s.key, []]));
try {
  process.stdout.write(`${jobs} jobs at ${rate}/s, ${runs} round(s); each cell p50 / p90 in ms, first ${WARM_JOBS} jobs left out\n`);
  for (const r of refs) process.stdout.write(`@${r.label}: ${r.subject}\n`);
  for (let round = 0; round < runs; round++) {
    for (const system of round % 2 ? [...systems].reverse() : systems) {
      const stages = await tracedRun(server, system, round, systems.indexOf(system));
      const s = summarizeStages(stages);
      summaries.get(system.key)!.push(s);
      process.stdout.write(`round ${round + 1} ${system.key.padEnd(width)} ${line(s)}\n`);
      const slowest = [...stages].sort((a, b) => b.latencyMs - a.latencyMs).slice(0, tail);
      for (const j of slowest) {
        process.stdout.write(
          `    seq ${j.seq} latency ${ms(j.latencyMs)}  ${STAGES.map((k) => `${k.replace('Ms', '')} ${ms(j[k])}`).join('  ')}\n`,
        );
      }
    }
  }
  process.stdout.write('median of the rounds:\n');
  const median = (key: string, f: (s: StageSummary) => number) => spread(summaries.get(key)!.map(f)).median;
  // One line of p50s, each read from the rounds' summaries by `value`.
  const p50s = (key: string, value: (f: (s: StageSummary) => number) => number) =>
    `  ${key.padEnd(width)} latency p50 ${ms(value((s) => s.latency.p50))}  ` +
    STAGES.map((k) => `${k.replace('Ms', '')} p50 ${ms(value((s) => s.stages[k].p50))}`).join('  ') +
    '\n';
  for (const { key } of systems) process.stdout.write(p50s(key, (f) => median(key, f)));
  // Against the first ref: the difference of each median, in ms (a stage's p50 can be negative).
  const compared = systems.filter((s) => s.base !== undefined && s.base !== s.key);
  if (compared.length > 0) process.stdout.write("each median minus the first ref's, ms:\n");
  for (const { key, base } of compared) process.stdout.write(p50s(key, (f) => median(key, f) - median(base!, f)));
} finally {
  await server.close();
}
process.exit(0);
