// Many worker processes on one database: the same drain and the same start-latency run with
// 1, 2 and 4 worker processes (each the library's defaults: one queue of 10 slots), the
// process counts interleaved round by round on a tuned server of the bench's own. On a
// 2-core machine this shows contention, not speed-up; the targets are no collapse (4
// processes >= 80% of 1 process's drain rate, start latency p99 within 2x), claims spread
// roughly evenly over the processes, and no job run twice (checked against the database).
//
//   npm run bench:scale -- [--processes 1,2,4] [--rounds 3] [--jobs 20000] [--rate 100]
//                          [--latency-jobs 1000] [--out results/scale]

import os from 'node:os';
import { parseArgs } from 'node:util';
import { machineRecord } from './machine.ts';
import { Child } from './proc.ts';
import { writeResults } from './report/write-results.ts';
import { type LatencyRunOptions, latencyValues } from './scenarios/latency.ts';
import { openServer, type PgServer } from './server.ts';
import { nowMs, spread } from './stats.ts';
import { workerFor } from './systems/index.ts';
import { variantById } from './systems/variants.ts';
import { until } from './until.ts';

const { values: flags } = parseArgs({
  options: {
    processes: { type: 'string', default: '1,2,4' },
    rounds: { type: 'string', default: '3' },
    jobs: { type: 'string', default: '20000' },
    rate: { type: 'string', default: '100' },
    'latency-jobs': { type: 'string', default: '1000' },
    out: { type: 'string', default: 'results/scale' },
  },
});
const PROCESSES = flags.processes.split(',').map(Number);
const ROUNDS = Number(flags.rounds);
const JOBS = Number(flags.jobs);
const RATE = Number(flags.rate);
const LATENCY_JOBS = Number(flags['latency-jobs']);
const VARIANT = variantById('ab-defaults');
/** How long after the last enqueue the workers may take to start the remaining jobs. */
const GRACE_MS = 5_000;
const DRAIN_CAP_MS = 300_000;

interface Shared {
  starts: Array<[number, number]>;
  cpuMs: number;
}

/** The run's figures, and what the database and the handlers' starts say about it. */
interface RunOut {
  ok: boolean;
  detail: string;
  /** Handler starts per process, in process order. */
  perProcess: number[];
  /** Seqs started more than once (none may be, without a fault). */
  duplicates: number;
  values: Record<string, number>;
}

/** K idle worker processes on `url`, each started at once; `body` runs while they work (it may ask how many handlers started); then they report. */
async function withWorkers(url: string, k: number, body: (started: () => Promise<number>) => Promise<void>): Promise<Shared[]> {
  const children = Array.from({ length: k }, () => new Child('./child/worker.ts'));
  try {
    await Promise.all(children.map((c) => c.waitFor('booted', 30_000)));
    for (const c of children) c.send({ type: 'run', role: 'shared', variantId: VARIANT.id, url });
    await Promise.all(children.map((c) => c.waitFor('ready', 60_000)));
    for (const c of children) c.send({ type: 'go' });
    const started = async () => {
      const replies = children.map((c) => c.waitFor<{ type: string; n: number }>('count', 10_000));
      for (const c of children) c.send({ type: 'count' });
      return (await Promise.all(replies)).reduce((s, r) => s + r.n, 0);
    };
    await body(started);
    for (const c of children) c.send({ type: 'stop' });
    return await Promise.all(children.map((c) => c.waitFor<Shared & { type: string }>('result', 60_000)));
  } finally {
    await Promise.all(children.map((c) => c.end()));
  }
}

/** Waits until `n` jobs are done: first until the workers started `n` handlers (asked over IPC), then by the database (the real end). */
async function drained(
  w: { countDone(n: number): Promise<number> },
  started: () => Promise<number>,
  n: number,
  capMs: number,
): Promise<boolean> {
  const t0 = nowMs();
  if (!(await until(async () => (await started()) >= n, capMs, 5))) return false;
  return until(async () => (await w.countDone(n)) >= n, Math.max(1_000, capMs - (nowMs() - t0)), 5);
}

/** Checks every start against the database: each seq started once, and done. */
async function check(url: string, shared: Shared[], expected: number): Promise<Omit<RunOut, 'values'>> {
  const w = await workerFor(VARIANT, url);
  try {
    const executed = shared.flatMap((s) => s.starts.map(([seq]) => seq));
    const duplicates = executed.length - new Set(executed).size;
    const v = await w.verify(executed, expected);
    return { ok: v.ok && duplicates === 0, detail: v.detail, perProcess: shared.map((s) => s.starts.length), duplicates };
  } finally {
    await w.close();
  }
}

async function drainRun(server: PgServer, k: number): Promise<RunOut> {
  const name = `bench_scale_drain_${process.pid}`;
  const url = await server.createDatabase(name);
  try {
    const w = await workerFor(VARIANT, url);
    let elapsedMs = 0;
    let done = false;
    try {
      await w.setup();
      await w.enqueueBulk(Array.from({ length: JOBS }, (_, i) => i));
      let t0 = 0;
      const shared = await withWorkers(url, k, async (started) => {
        t0 = nowMs();
        done = await drained(w, started, JOBS, DRAIN_CAP_MS);
        elapsedMs = nowMs() - t0;
      });
      const c = await check(url, shared, JOBS);
      const cpuMs = shared.reduce((s, x) => s + x.cpuMs, 0);
      return {
        ...c,
        ok: c.ok && done,
        detail: done ? c.detail : `not drained within ${DRAIN_CAP_MS} ms`,
        values: { jobsPerSec: (JOBS / elapsedMs) * 1000, elapsedMs, workerCpuUsPerJob: (cpuMs * 1000) / JOBS },
      };
    } finally {
      await w.close();
    }
  } finally {
    await server.dropDatabase(name).catch(() => undefined);
  }
}

async function latencyRun(server: PgServer, k: number): Promise<RunOut> {
  const name = `bench_scale_latency_${process.pid}`;
  const url = await server.createDatabase(name);
  try {
    const w = await workerFor(VARIANT, url);
    try {
      await w.setup();
      const o: LatencyRunOptions = { variantId: VARIANT.id, rate: RATE, jobs: LATENCY_JOBS, via: 'library' };
      let commits: Array<[number, number]> = [];
      let p: { callMs: number[]; lateMs: number; errorCount: number } = { callMs: [], lateMs: 0, errorCount: 0 };
      const shared = await withWorkers(url, k, async (started) => {
        const producer = new Child('./child/producer.ts');
        try {
          await producer.waitFor('booted', 30_000);
          producer.send({ type: 'run', variantId: o.variantId, url, via: o.via, rate: o.rate, jobs: o.jobs });
          await producer.waitFor('ready', 30_000);
          producer.send({ type: 'go' });
          const r = await producer.waitFor<{
            type: string;
            commits: Array<[number, number]>;
            callMs: number[];
            lateMs: number;
            errorCount: number;
          }>('result', (o.jobs / o.rate) * 1000 + 60_000);
          commits = r.commits;
          p = r;
          await drained(w, started, commits.length, GRACE_MS);
          producer.send({ type: 'close' });
          await producer.waitFor('closed', 30_000);
        } finally {
          await producer.end();
        }
      });
      const c = await check(url, shared, commits.length);
      const starts = new Map(shared.flatMap((s) => s.starts));
      const lat = commits.map(([seq, t]) => {
        const s = starts.get(seq);
        return s === undefined ? Number.POSITIVE_INFINITY : s - t;
      });
      const problems = [...(p.errorCount ? [`${p.errorCount} enqueue error(s)`] : []), ...(c.ok ? [] : [c.detail])];
      return { ...c, ok: problems.length === 0, detail: problems.join('; ') || 'ok', values: latencyValues(lat, p) };
    } finally {
      await w.close();
    }
  } finally {
    await server.dropDatabase(name).catch(() => undefined);
  }
}

const median = (xs: number[]) => spread(xs).median;
const r2 = (x: number) => Math.round(x * 100) / 100;

interface Row {
  processes: number;
  round: number;
  drain: RunOut;
  latency: RunOut;
  loadAvg: number[];
}

async function main(): Promise<void> {
  const server = await openServer('cluster');
  try {
    const machine = await machineRecord(server);
    const rows: Row[] = [];
    // Round 0 warms the server and the children's module cache; it is kept in the file, not counted.
    for (let round = 0; round <= ROUNDS; round++) {
      const order = round % 2 ? [...PROCESSES].reverse() : PROCESSES;
      for (const k of order) {
        const loadAvg = os.loadavg().map(r2);
        const drain = await drainRun(server, k);
        const latency = await latencyRun(server, k);
        rows.push({ processes: k, round, drain, latency, loadAvg });
        console.log(
          JSON.stringify({
            round,
            processes: k,
            jobsPerSec: r2(drain.values.jobsPerSec!),
            p99: latency.values.p99,
            ok: drain.ok && latency.ok,
          }),
        );
      }
    }
    const out = {
      command: `npm run bench:scale -- ${process.argv.slice(2).join(' ')}`.trim(),
      commit: machine.gitCommit + (machine.gitDirty ? ' (dirty)' : ''),
      at: new Date().toISOString(),
      machine,
      variant: { id: VARIANT.id, note: VARIANT.note, options: VARIANT.options },
      params: { processes: PROCESSES, rounds: ROUNDS, jobs: JOBS, rate: RATE, latencyJobs: LATENCY_JOBS, graceMs: GRACE_MS },
      rows,
      loadAvgAtEnd: os.loadavg().map(r2),
    };
    const base = await writeResults(flags.out, 'scale', out, report(out));
    console.log(`wrote ${base}.json and .md`);
  } finally {
    await server.close();
  }
}

/** The Markdown report, generated from the JSON only. */
export function report(o: Record<string, any>): string {
  const counted = (o.rows as Row[]).filter((r) => r.round > 0);
  const by = (k: number) => counted.filter((r) => r.processes === k);
  const one = by(o.params.processes[0]);
  const base = {
    rate: median(one.map((r) => r.drain.values.jobsPerSec!)),
    p50: median(one.map((r) => r.latency.values.p50!)),
    p99: median(one.map((r) => r.latency.values.p99!)),
  };
  const m = o.machine;
  const lines = [
    `# Many worker processes on one database: ${o.params.processes.join(', ')} processes`,
    '',
    `Command: \`${o.command}\`, commit ${o.commit}, ${o.at}.`,
    '',
    `Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}, Node ${m.node}; PostgreSQL ${m.postgres.version}, ${m.postgres.source}, settings ${Object.entries(
      m.postgres.settings,
    )
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}. Load average (1/5/15 min) at start ${m.loadAvgAtStart.join(' / ')}, at end ${o.loadAvgAtEnd.join(' / ')}.`,
    '',
    `Each worker process: ${o.variant.note} (\`${JSON.stringify(o.variant.options)}\`). Drain: ${o.params.jobs.toLocaleString('en')} no-op jobs enqueued up front, then every process started at once; jobs/s = jobs / (start until the database shows all done). Latency: a producer process at ${o.params.rate} jobs/s for ${o.params.latencyJobs.toLocaleString('en')} jobs, handler start minus enqueue commit. ${o.params.rounds} counted rounds after a warm-up round, the process counts in alternating order. Every run is checked against the database: each job done once, started once.`,
    '',
    '| processes | drain jobs/s, run by run | median | against 1 process | starts per process (each run) | latency p50 ms, run by run | p99 ms, run by run | p50 / p99 against 1 process | every run verified |',
    '|---:|---|---:|---:|---|---|---|---|---|',
  ];
  for (const k of o.params.processes as number[]) {
    const rs = by(k);
    const rate = median(rs.map((r) => r.drain.values.jobsPerSec!));
    const p50 = median(rs.map((r) => r.latency.values.p50!));
    const p99 = median(rs.map((r) => r.latency.values.p99!));
    lines.push(
      `| ${k} | ${rs.map((r) => Math.round(r.drain.values.jobsPerSec!)).join(', ')} | ${Math.round(rate)} | ${(rate / base.rate).toFixed(3)}x | ${rs
        .map((r) => r.drain.perProcess.join('/'))
        .join(
          '; ',
        )} | ${rs.map((r) => r2(r.latency.values.p50!)).join(', ')} | ${rs.map((r) => r2(r.latency.values.p99!)).join(', ')} | ${(p50 / base.p50).toFixed(2)}x / ${(p99 / base.p99).toFixed(2)}x | ${rs.every((r) => r.drain.ok && r.latency.ok) ? 'yes' : `no: ${rs.flatMap((r) => [r.drain, r.latency].filter((x) => !x.ok).map((x) => x.detail)).join('; ')}`} |`,
    );
  }
  const top = (o.params.processes as number[]).at(-1)!;
  const topRate = median(by(top).map((r) => r.drain.values.jobsPerSec!));
  const topP99 = median(by(top).map((r) => r.latency.values.p99!));
  const dup = counted.reduce((s, r) => s + r.drain.duplicates + r.latency.duplicates, 0);
  lines.push(
    '',
    `Targets: ${top} processes at ${(topRate / base.rate).toFixed(3)}x of 1 process's drain rate (target >= 0.80: ${topRate / base.rate >= 0.8 ? 'met' : 'not met'}), start latency p99 at ${(topP99 / base.p99).toFixed(2)}x (target <= 2x: ${topP99 / base.p99 <= 2 ? 'met' : 'not met'}); jobs started twice over every counted run: ${dup}.`,
    '',
  );
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
