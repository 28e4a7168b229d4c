// Queues sharded across independent PostgreSQL clusters: the same drain with every queue on one
// server, then with the queues split over two servers, the modes interleaved round by round.
// Both servers are the bench's own (same binaries and settings) on this machine; the worker
// processes are the same in both modes (each works every queue, 10 slots each), so the
// difference is the database side. On a 2-core machine both servers and the workers share
// the cores: the figure is what a second cluster gives here, not on separate hosts.
//
//   npm run bench:shard -- [--rounds 3] [--jobs 20000] [--workers 2] [--queues 2] [--out results/shard]

import os from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createShardedBaton } from '../src/create-sharded-baton.ts';
import { machineRecord } from './machine.ts';
import { Child } from './proc.ts';
import { writeResults } from './report/write-results.ts';
import { openServer, type PgServer } from './server.ts';
import { nowMs, spread } from './stats.ts';
import { until } from './until.ts';

const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    jobs: { type: 'string', default: '20000' },
    workers: { type: 'string', default: '2' },
    queues: { type: 'string', default: '2' },
    out: { type: 'string', default: 'results/shard' },
  },
});
const ROUNDS = Number(flags.rounds);
const JOBS = Number(flags.jobs);
const WORKERS = Number(flags.workers);
const QUEUES = Array.from({ length: Number(flags.queues) }, (_, i) => `q${i + 1}`);
const SLOTS = 10;
const BATCH = 1_000;
const DRAIN_CAP_MS = 300_000;
const MODES = ['one', 'two'] as const;
type Mode = (typeof MODES)[number];

interface Row {
  mode: Mode;
  round: number;
  ok: boolean;
  detail: string;
  enqueuePerSec: number;
  drainPerSec: number;
  drainMs: number;
  /** Jobs each cluster held. */
  perCluster: Record<string, number>;
  workerCpuUsPerJob: number;
  loadAvg: number[];
}

const r2 = (x: number) => Math.round(x * 100) / 100;

/** Queue i goes to cluster a in mode one; alternately to a and b in mode two. */
function layout(mode: Mode, urls: { a: string; b: string }) {
  const clusters: Record<string, string> = mode === 'one' ? { a: urls.a } : { a: urls.a, b: urls.b };
  const routes = Object.fromEntries(QUEUES.map((q, i) => [q, mode === 'one' || i % 2 === 0 ? 'a' : 'b']));
  return { clusters, routes };
}

async function succeeded(pools: pg.Pool[]): Promise<number[]> {
  return Promise.all(
    pools.map(async (p) => Number((await p.query("SELECT count(*)::int AS n FROM baton.jobs WHERE state = 'succeeded'")).rows[0].n)),
  );
}

async function run(servers: [PgServer, PgServer], mode: Mode, round: number): Promise<Row> {
  const name = `bench_shard_${process.pid}`;
  const loadAvg = os.loadavg().map(r2);
  const urls = { a: await servers[0].createDatabase(name), b: await servers[1].createDatabase(name) };
  const { clusters, routes } = layout(mode, urls);
  const pools = Object.values(clusters).map((u) => {
    // The drop at the end of the run ends its sessions (WITH FORCE); a pool without a listener would crash the bench.
    const p = new pg.Pool({ connectionString: u, max: 1 });
    p.on('error', () => undefined);
    return p;
  });
  const producer = createShardedBaton({ clusters, routes, poolSize: 4 });
  const children = Array.from({ length: WORKERS }, () => new Child('./child/shard-worker.ts'));
  try {
    await producer.migrate();
    // Enqueue up front, a batch per queue at a time (a batch goes to one cluster).
    const e0 = nowMs();
    for (let sent = 0; sent < JOBS; ) {
      await Promise.all(
        QUEUES.map(async (queue) => {
          const n = Math.min(BATCH, JOBS - sent);
          sent += n;
          if (n > 0) await producer.enqueueMany(Array.from({ length: n }, () => ({ jobType: 'noop', queue })));
        }),
      );
    }
    const enqueueMs = nowMs() - e0;
    const queues = Object.fromEntries(QUEUES.map((q) => [q, SLOTS]));
    await Promise.all(children.map((c) => c.waitFor('booted', 30_000)));
    for (const c of children) c.send({ type: 'run', clusters, routes, queues });
    await Promise.all(children.map((c) => c.waitFor('ready', 60_000)));
    const t0 = nowMs();
    for (const c of children) c.send({ type: 'go' });
    const done = await until(async () => (await succeeded(pools)).reduce((s, n) => s + n, 0) >= JOBS, DRAIN_CAP_MS, 50);
    const drainMs = nowMs() - t0;
    for (const c of children) c.send({ type: 'stop' });
    const results = await Promise.all(children.map((c) => c.waitFor<{ type: string; succeeded: number; cpuMs: number }>('result', 60_000)));
    const counts = await succeeded(pools);
    const ran = results.reduce((s, r) => s + r.succeeded, 0);
    const twice = await Promise.all(
      pools.map(async (p) => Number((await p.query('SELECT count(*)::int AS n FROM baton.jobs WHERE attempt > 1')).rows[0].n)),
    );
    const problems = [
      ...(done ? [] : [`not drained within ${DRAIN_CAP_MS} ms`]),
      ...(ran === JOBS ? [] : [`workers ran ${ran} jobs, expected ${JOBS}`]),
      ...(twice.some((n) => n > 0) ? [`${twice.reduce((s, n) => s + n, 0)} job(s) took a second attempt`] : []),
    ];
    return {
      mode,
      round,
      ok: problems.length === 0,
      detail: problems.join('; ') || 'ok',
      enqueuePerSec: (JOBS / enqueueMs) * 1000,
      drainPerSec: (JOBS / drainMs) * 1000,
      drainMs,
      perCluster: Object.fromEntries(Object.keys(clusters).map((c, i) => [c, counts[i] ?? 0])),
      workerCpuUsPerJob: (results.reduce((s, r) => s + r.cpuMs, 0) * 1000) / JOBS,
      loadAvg,
    };
  } finally {
    await Promise.all(children.map((c) => c.end()));
    await producer.stop();
    await Promise.all(pools.map((p) => p.end()));
    await Promise.all(servers.map((s) => s.dropDatabase(name).catch(() => undefined)));
  }
}

async function main(): Promise<void> {
  const servers: [PgServer, PgServer] = [await openServer('cluster'), await openServer('cluster')];
  try {
    const machine = await machineRecord(servers[0]);
    const rows: Row[] = [];
    // Round 0 warms both servers and the children's module cache; it is kept in the file, not counted.
    for (let round = 0; round <= ROUNDS; round++) {
      for (const mode of round % 2 ? [...MODES].reverse() : MODES) {
        const row = await run(servers, mode, round);
        rows.push(row);
        console.log(
          JSON.stringify({
            round,
            mode,
            drainPerSec: Math.round(row.drainPerSec),
            enqueuePerSec: Math.round(row.enqueuePerSec),
            ok: row.ok,
          }),
        );
      }
    }
    const out = {
      command: `npm run bench:shard -- ${process.argv.slice(2).join(' ')}`.trim(),
      commit: machine.gitCommit + (machine.gitDirty ? ' (dirty)' : ''),
      at: new Date().toISOString(),
      machine,
      servers: servers.map((s) => s.source),
      params: { rounds: ROUNDS, jobs: JOBS, workers: WORKERS, queues: QUEUES, slotsPerQueue: SLOTS, batch: BATCH },
      rows,
      loadAvgAtEnd: os.loadavg().map(r2),
    };
    const base = await writeResults(flags.out, 'shard', out, report(out));
    console.log(`wrote ${base}.json and .md`);
  } finally {
    await Promise.all(servers.map((s) => s.close()));
  }
}

/** The Markdown report, generated from the JSON only. */
export function report(o: Record<string, any>): string {
  const counted = (o.rows as Row[]).filter((r) => r.round > 0);
  const by = (m: Mode) => counted.filter((r) => r.mode === m);
  const med = (m: Mode, f: (r: Row) => number) => spread(by(m).map(f)).median;
  const one = med('one', (r) => r.drainPerSec);
  const two = med('two', (r) => r.drainPerSec);
  const m = o.machine;
  const lines = [
    '# Queues sharded across clusters: one PostgreSQL server against two',
    '',
    `Command: \`${o.command}\`, commit ${o.commit}, ${o.at}.`,
    '',
    `Machine: ${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.os}, Node ${m.node}; PostgreSQL ${m.postgres.version}, two servers (${(o.servers as string[]).join('; ')}), each with settings ${Object.entries(
      m.postgres.settings,
    )
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}. Load average (1/5/15 min) at start ${m.loadAvgAtStart.join(' / ')}, at end ${o.loadAvgAtEnd.join(' / ')}.`,
    '',
    `Drain: ${o.params.jobs.toLocaleString('en')} no-op jobs over ${o.params.queues.length} queues (${o.params.queues.join(', ')}), enqueued up front in batches of ${o.params.batch}; then ${o.params.workers} worker processes (each a sharded Baton working every queue, ${o.params.slotsPerQueue} slots per queue) started at once; jobs/s = jobs / (start until the databases show all succeeded). Mode one: every queue on server a. Mode two: the queues alternately on a and b. ${o.params.rounds} counted rounds after a warm-up round, the modes in alternating order. Each run checked: every job run once, none took a second attempt.`,
    '',
    '| mode | drain jobs/s, run by run | median | against one cluster | enqueue jobs/s (median) | worker CPU µs/job (median) | jobs per cluster (last run) | load average (1 min) at each start | every run verified |',
    '|---|---|---:|---:|---:|---:|---|---|---|',
  ];
  for (const mode of MODES) {
    const rs = by(mode);
    const rate = med(mode, (r) => r.drainPerSec);
    lines.push(
      `| ${mode === 'one' ? 'one cluster' : 'two clusters'} | ${rs.map((r) => Math.round(r.drainPerSec)).join(', ')} | ${Math.round(rate)} | ${(rate / one).toFixed(2)}x | ${Math.round(med(mode, (r) => r.enqueuePerSec))} | ${Math.round(med(mode, (r) => r.workerCpuUsPerJob))} | ${Object.entries(
        rs.at(-1)?.perCluster ?? {},
      )
        .map(([c, n]) => `${c}: ${n}`)
        .join(', ')} | ${rs.map((r) => r.loadAvg[0]).join(', ')} | ${
        rs.every((r) => r.ok)
          ? 'yes'
          : `no: ${rs
              .filter((r) => !r.ok)
              .map((r) => r.detail)
              .join('; ')}`
      } |`,
    );
  }
  lines.push('', `Two clusters drain at ${(two / one).toFixed(2)}x the rate of one on this machine.`, '');
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
