// Where a notify-mode start latency goes, stage by stage, for Baton and its peers: the
// latency workload of the harness (producer in its own process, fixed rate) with the
// worker's pg client traced (child/pg-trace.ts). Systems run in rounds, alternating the
// order, like `npm run bench`. Diagnostics only: nothing here enters results/.
// Usage: npx tsx bench/latency-breakdown.ts [--systems baton-notify-cir,graphile-perf]
//          [--rate 100] [--jobs 1000] [--runs 3] [--tail 0]

import { parseArgs } from 'node:util';
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
  },
});
const systems = values.systems.split(',').map((s) => variantById(s.trim()).id);
const [rate, jobs, runs, tail] = [values.rate, values.jobs, values.runs, values.tail].map(Number) as [number, number, number, number];
// The first jobs of a run pay for connections and plans being made.
const WARM_JOBS = Math.min(10, Math.floor(jobs / 10));

async function tracedRun(server: PgServer, variantId: string, round: number): Promise<JobStages[]> {
  const name = `bench_breakdown_${process.pid}_${round}_${variantId.replace(/-/g, '_')}`;
  const url = await server.createDatabase(name);
  try {
    const { p, w } = await latencyRun(url, { variantId, rate, jobs, via: 'library', trace: true });
    if (!w.verify.ok) throw new Error(`${variantId}: run failed verification: ${w.verify.detail}`);
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
const summaries = new Map<string, StageSummary[]>(systems.map((s) => [s, []]));
try {
  process.stdout.write(`${jobs} jobs at ${rate}/s, ${runs} round(s); each cell p50 / p90 in ms, first ${WARM_JOBS} jobs left out\n`);
  for (let round = 0; round < runs; round++) {
    for (const id of round % 2 ? [...systems].reverse() : systems) {
      const stages = await tracedRun(server, id, round);
      const s = summarizeStages(stages);
      summaries.get(id)!.push(s);
      process.stdout.write(`round ${round + 1} ${id.padEnd(18)} ${line(s)}\n`);
      const slowest = [...stages].sort((a, b) => b.latencyMs - a.latencyMs).slice(0, tail);
      for (const j of slowest) {
        process.stdout.write(
          `    seq ${j.seq} latency ${ms(j.latencyMs)}  ${STAGES.map((k) => `${k.replace('Ms', '')} ${ms(j[k])}`).join('  ')}\n`,
        );
      }
    }
  }
  process.stdout.write('median of the rounds:\n');
  for (const [id, list] of summaries) {
    const med = (f: (s: StageSummary) => number) => spread(list.map(f)).median;
    process.stdout.write(
      `  ${id.padEnd(18)} latency p50 ${ms(med((s) => s.latency.p50))}  ` +
        STAGES.map((k) => `${k.replace('Ms', '')} p50 ${ms(med((s) => s.stages[k].p50))}`).join('  ') +
        '\n',
    );
  }
} finally {
  await server.close();
}
process.exit(0);
