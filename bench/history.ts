// `npm run bench:history`: what history costs. On the bench's own server, per mode (retention
// on/off x autovacuum on/off, in rounds): drain throughput and idle start latency on a fresh
// table, then again after a million jobs went through the engine, with the idle claim's buffers
// and the table's pages. Then /metrics and /api/queues on an empty table against ten million
// finished rows written with generate_series. Writes results/history/history-<date>.{json,md}.
// Flags: --runs 3 --jobs 1000000 --drain 100000 --rows 10000000 --parts drain,scrape --out dir
// --modes ret-av,ret-noav,noret-av,noret-noav (retention on/off x autovacuum on/off; default all).

import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { flowQueries } from '../src/db/pg/queries/flow-control.ts';
import { createApp } from '../src/http/app.ts';
import { createMetrics } from '../src/http/metrics.ts';
import { type Baton, createBaton } from '../src/index.ts';
import { renderHistoryReport } from './history-report.ts';
import { machineRecord } from './machine.ts';
import { openServer, type PgServer } from './server.ts';
import { distribution, nowMs } from './stats.ts';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    jobs: { type: 'string', default: '1000000' },
    drain: { type: 'string', default: '100000' },
    rows: { type: 'string', default: '10000000' },
    parts: { type: 'string', default: 'drain,scrape' },
    modes: { type: 'string', default: 'ret-av,ret-noav,noret-av,noret-noav' },
    out: { type: 'string', default: 'results/history' },
  },
});
const RUNS = Number(flags.runs);
const HISTORY_JOBS = Number(flags.jobs);
const DRAIN = Number(flags.drain);
const ROWS = Number(flags.rows);
const PARTS = flags.parts.split(',');
/** Jobs enqueued (by SQL) and drained at a time while the history builds up. */
const CHUNK = 250_000;
const LATENCY_JOBS = 200;
const LATENCY_GAP_MS = 10;
const SCRAPES = 30;

export interface Mode {
  retention: boolean;
  autovacuum: boolean;
}
const modeKey = (m: Mode) => `${m.retention ? '' : 'no'}ret-${m.autovacuum ? '' : 'no'}av`;
export const MODES: Mode[] = [
  { retention: true, autovacuum: true },
  { retention: true, autovacuum: false },
  { retention: false, autovacuum: true },
  { retention: false, autovacuum: false },
].filter((m) => flags.modes.split(',').includes(modeKey(m)));
export const modeName = (m: Mode) => `retention ${m.retention ? 'on (0)' : 'off'}, autovacuum ${m.autovacuum ? 'on' : 'off'}`;

/** One phase's figures: fresh table, or after the history went through. */
export interface Phase {
  jobsPerSec: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** Shared buffers (hit + read) of one claim (the fair claim, the engine's default) on the empty queue. */
  idleClaimBuffers: number;
  /** The planner's total cost of that claim (custom plan): above jit_above_cost, a session with JIT on compiles it. */
  idleClaimCost?: number;
  tablePages: number;
  claimIndexPages: number;
  /** Rows in the table, live and finished (dead versions not counted). */
  rows: number;
}
export interface DrainRun {
  mode: Mode;
  round: number;
  fresh: Phase;
  after: Phase;
  /** Vacuums of jobs (auto or not) during the run. */
  vacuums: number;
  historySeconds: number;
  /**
   * With retention on: seconds an idle engine took, after the history, to delete the finished
   * jobs the last drains left behind, before the "after" phase (0 with retention off).
   */
  catchUpSeconds?: number;
}
export interface ScrapeRound {
  round: number;
  emptyMetricsMs: number;
  emptyQueuesMs: number;
  fullMetricsMs: number;
  fullQueuesMs: number;
  analyzed: boolean;
}

async function setAutovacuum(server: PgServer, on: boolean): Promise<void> {
  await server.query(`ALTER SYSTEM SET autovacuum = ${on ? 'on' : 'off'}`);
  await server.query('SELECT pg_reload_conf()');
  // Reloads reach sessions asynchronously: a fresh session shows when it took effect.
  for (let i = 0; i < 100; i++) {
    const [r] = await server.query<{ v: string }>(`SELECT current_setting('autovacuum') AS v`);
    if (r?.v === (on ? 'on' : 'off')) return;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error('autovacuum setting did not take effect');
}

function engine(url: string, retention: boolean, onRun: () => void): Baton {
  return createBaton({
    connectionString: url,
    poolSize: 10,
    queues: { q: 500 },
    retention: retention
      ? { succeededMs: 0, cancelledMs: 0, deadLetteredMs: 0 }
      : { succeededMs: null, cancelledMs: null, deadLetteredMs: null },
    handlers: { x: onRun },
  });
}

async function insertPending(pool: pg.Pool, n: number): Promise<void> {
  await pool.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'q', 'x' FROM generate_series(1, $1::int)`, [n]);
}

/** Drains n jobs enqueued up front by SQL with a fresh engine; jobs per second, start-up included. */
async function drain(url: string, pool: pg.Pool, n: number, retention: boolean): Promise<number> {
  await insertPending(pool, n);
  let done = 0;
  let allRan!: () => void;
  const ran = new Promise<void>((r) => (allRan = r));
  const baton = engine(url, retention, () => void (++done === n && allRan()));
  const t0 = nowMs();
  await baton.start();
  await ran;
  const ms = nowMs() - t0;
  await baton.stop();
  return n / (ms / 1000);
}

/**
 * Lets retention catch up: an idle engine runs until no finished job is left. Each drain stops
 * its engine at once, so the last drains' finished jobs are still in the table; the "after"
 * phase is to measure a table that a million jobs went through, not a sweep of their leftovers
 * running beside it (the fresh phase starts with none either). Seconds taken.
 */
async function catchUp(url: string, pool: pg.Pool): Promise<number> {
  const baton = engine(url, true, () => undefined);
  const t0 = nowMs();
  await baton.start();
  try {
    for (const deadline = t0 + 600_000; ; ) {
      const [r] = (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM baton.jobs WHERE finished_at IS NOT NULL')).rows;
      if (r!.n === 0) return (nowMs() - t0) / 1000;
      if (nowMs() > deadline) throw new Error(`retention did not catch up in 10 minutes (${r!.n} finished jobs left)`);
      await new Promise((res) => setTimeout(res, 100));
    }
  } finally {
    await baton.stop();
  }
}

/** Idle start latency: one job at a time into an idle queue, enqueue call to handler start. */
async function latency(url: string, retention: boolean): Promise<number[]> {
  let started: (() => void) | null = null;
  const baton = engine(url, retention, () => started?.());
  await baton.start();
  const samples: number[] = [];
  try {
    for (let i = 0; i < LATENCY_JOBS; i++) {
      const ran = new Promise<void>((r) => (started = r));
      const t0 = nowMs();
      await baton.enqueue({ queue: 'q', jobType: 'x' });
      await ran;
      samples.push(nowMs() - t0);
      await new Promise((r) => setTimeout(r, LATENCY_GAP_MS));
    }
  } finally {
    await baton.stop();
  }
  return samples;
}

async function probe(pool: pg.Pool): Promise<Omit<Phase, 'jobsPerSec' | 'latencyP50Ms' | 'latencyP99Ms'>> {
  const q = flowQueries('baton');
  const r = await pool.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${q.claimFair.open.text}`, ['q', 200, 'probe', true, 60_000, '', 0]);
  const plan = (
    r.rows[0]['QUERY PLAN'] as Array<{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number; 'Total Cost': number } }>
  )[0]!.Plan;
  const [s] = (
    await pool.query<{ t: number; c: number; n: number }>(`SELECT pg_relation_size('baton.jobs')::float8 / 8192 AS t,
      pg_relation_size('baton.jobs_claim_idx')::float8 / 8192 AS c, (SELECT count(*) FROM baton.jobs)::float8 AS n`)
  ).rows;
  return {
    idleClaimBuffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'],
    idleClaimCost: plan['Total Cost'],
    tablePages: s!.t,
    claimIndexPages: s!.c,
    rows: s!.n,
  };
}

async function phase(url: string, pool: pg.Pool, retention: boolean): Promise<Phase> {
  const jobsPerSec = await drain(url, pool, DRAIN, retention);
  const lat = distribution(await latency(url, retention));
  return { jobsPerSec, latencyP50Ms: lat.p50, latencyP99Ms: lat.p99, ...(await probe(pool)) };
}

async function drainRun(server: PgServer, mode: Mode, round: number): Promise<DrainRun> {
  await setAutovacuum(server, mode.autovacuum);
  const name = `bench_history_${process.pid}_${round}_${Number(mode.retention)}${Number(mode.autovacuum)}`;
  const url = await server.createDatabase(name);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  try {
    const migrator = createBaton({ connectionString: url });
    await migrator.migrate();
    await migrator.stop();
    const vacuums = async () =>
      (
        await pool.query<{ n: number }>(
          `SELECT (vacuum_count + autovacuum_count)::int AS n FROM pg_stat_user_tables WHERE relid = 'baton.jobs'::regclass`,
        )
      ).rows[0]!.n;
    const fresh = await phase(url, pool, mode.retention);
    const v0 = await vacuums();
    const t0 = nowMs();
    for (let left = HISTORY_JOBS; left > 0; left -= CHUNK) await drain(url, pool, Math.min(CHUNK, left), mode.retention);
    const historySeconds = (nowMs() - t0) / 1000;
    const catchUpSeconds = mode.retention ? await catchUp(url, pool) : 0;
    const after = await phase(url, pool, mode.retention);
    return { mode, round, fresh, after, vacuums: (await vacuums()) - v0, historySeconds, catchUpSeconds };
  } finally {
    await pool.end();
    await server.dropDatabase(name);
  }
}

async function timeRequest(app: ReturnType<typeof createApp>, url: string): Promise<number> {
  const t0 = nowMs();
  const res = await app.request(url);
  await res.text();
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  return nowMs() - t0;
}

/** Median time of SCRAPES requests of each path, alternating, after a warm-up of each. */
async function scrapeTimes(app: ReturnType<typeof createApp>): Promise<{ metrics: number; queues: number }> {
  await timeRequest(app, '/metrics');
  await timeRequest(app, '/api/queues');
  const m: number[] = [];
  const q: number[] = [];
  for (let i = 0; i < SCRAPES; i++) {
    m.push(await timeRequest(app, '/metrics'));
    q.push(await timeRequest(app, '/api/queues'));
  }
  return { metrics: distribution(m).p50, queues: distribution(q).p50 };
}

/** Ten million finished rows (1 in 1,000 dead-lettered) beside a little live work, by generate_series. */
async function fillHistory(pool: pg.Pool, rows: number): Promise<void> {
  const step = 1_000_000;
  for (let from = 1; from <= rows; from += step) {
    await pool.query(
      `INSERT INTO baton.jobs (queue, job_type, state, attempt, finished_at, started_at, dead_letter_reason)
       SELECT 'q', 'x', CASE WHEN g % 1000 = 0 THEN 'dead_lettered' ELSE 'succeeded' END, 1, now(), now(),
         CASE WHEN g % 1000 = 0 THEN 'attempts_exhausted' END
       FROM generate_series($1::int, $2::int) g`,
      [from, Math.min(rows, from + step - 1)],
    );
  }
  // What the engine's completes would have counted.
  await pool.query(`INSERT INTO baton.finished_counts (queue, state, shard, n)
    SELECT queue, state, 0, count(*) FROM baton.jobs WHERE finished_at IS NOT NULL GROUP BY queue, state`);
  await insertPending(pool, 1_000);
}

async function scrapeRounds(server: PgServer): Promise<ScrapeRound[]> {
  await setAutovacuum(server, true);
  const emptyUrl = await server.createDatabase(`bench_history_empty_${process.pid}`);
  const fullUrl = await server.createDatabase(`bench_history_full_${process.pid}`);
  const batons = [createBaton({ connectionString: emptyUrl }), createBaton({ connectionString: fullUrl })];
  const out: ScrapeRound[] = [];
  try {
    for (const b of batons) await b.migrate();
    const pool = new pg.Pool({ connectionString: fullUrl, max: 1 });
    pool.on('error', () => undefined);
    const emptyPool = new pg.Pool({ connectionString: emptyUrl, max: 1 });
    emptyPool.on('error', () => undefined);
    await insertPending(emptyPool, 1_000);
    await emptyPool.end();
    await fillHistory(pool, ROWS);
    const [empty, full] = batons.map((b) => createApp(b, { allowedHosts: '*', metrics: createMetrics(b, { processMetrics: false }) }));
    for (const analyzed of [false, true]) {
      if (analyzed) await pool.query('ANALYZE baton.jobs');
      for (let round = 1; round <= RUNS; round++) {
        const e = await scrapeTimes(empty!);
        const f = await scrapeTimes(full!);
        out.push({ round, analyzed, emptyMetricsMs: e.metrics, emptyQueuesMs: e.queues, fullMetricsMs: f.metrics, fullQueuesMs: f.queues });
      }
    }
    await pool.end();
  } finally {
    for (const b of batons) await b.stop();
  }
  return out;
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const server = await openServer('cluster');
  try {
    const machine = await machineRecord(server);
    const runs: DrainRun[] = [];
    if (PARTS.includes('drain')) {
      for (let round = 1; round <= RUNS; round++) {
        for (const mode of MODES) {
          process.stderr.write(`round ${round}: ${modeName(mode)}\n`);
          runs.push(await drainRun(server, mode, round));
        }
      }
    }
    const scrapes = PARTS.includes('scrape') ? await scrapeRounds(server) : [];
    const report = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      command: `npm run bench:history -- ${process.argv.slice(2).join(' ')}`.trim(),
      settings: {
        runs: RUNS,
        historyJobs: HISTORY_JOBS,
        drainJobs: DRAIN,
        chunk: CHUNK,
        latencyJobs: LATENCY_JOBS,
        rows: ROWS,
        scrapes: SCRAPES,
      },
      loadAvgAtEnd: os.loadavg().map((x) => Math.round(x * 100) / 100),
      machine,
      runs,
      scrapes,
    };
    const stamp = startedAt.toISOString().slice(0, 16).replace(/[T:]/g, '-');
    await mkdir(flags.out, { recursive: true });
    const base = path.join(flags.out, `history-${stamp}`);
    await writeFile(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
    await writeFile(`${base}.md`, renderHistoryReport(report));
    process.stdout.write(`wrote ${base}.md and .json\n`);
  } finally {
    await server.close();
  }
}

export type HistoryReport = {
  startedAt: string;
  finishedAt: string;
  command: string;
  settings: Record<string, number>;
  loadAvgAtEnd: number[];
  machine: Awaited<ReturnType<typeof machineRecord>>;
  runs: DrainRun[];
  scrapes: ScrapeRound[];
};

if (import.meta.url === `file://${process.argv[1]}`) await main();
