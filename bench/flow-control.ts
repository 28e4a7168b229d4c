// `npm run bench:flow`: what flow control costs and does, on the bench's own server.
//   drain     throughput of one worker draining a backlog spread over 10 tenants, fairness
//             'none' (the FIFO claim) against 'tenant' (the fair claim), alternating, in rounds.
//   fairness  tenant A's backlog of --backlog jobs, tenant B enqueuing 10 jobs/s: B's start latency
//             (started_at - created_at, database clock) with fairness on and off, and the idle
//             start latency on an empty queue.
//   cap       a concurrency key capped at 5 over 4 worker processes: peak running (from the
//             handlers' execution log) and the cap's utilisation under backlog.
//   rate      a queue limited to 100 starts/s over 4 worker processes: starts per second.
// Writes results/flow/flow-<date>.{json,md}. Flags: --runs 3 --drain 50000 --backlog 100000
// --parts drain,fairness,cap,rate --out results/flow

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createBaton } from '../src/index.ts';
import { peakRunning, peakStartsPerWindow, readRuns, utilisation } from '../test/flow-control/execution-log.ts';
import { machineRecord } from './machine.ts';
import { writeResults } from './report/write-results.ts';
import { openServer, type PgServer } from './server.ts';
import { type Distribution, distribution, nowMs } from './stats.ts';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    drain: { type: 'string', default: '50000' },
    backlog: { type: 'string', default: '100000' },
    parts: { type: 'string', default: 'drain,fairness,cap,rate' },
    out: { type: 'string', default: 'results/flow' },
  },
});
const RUNS = Number(flags.runs);
const DRAIN = Number(flags.drain);
const BACKLOG = Number(flags.backlog);
const PARTS = flags.parts.split(',');
/** A capped job's length: a call to a vendor, say. The claim's round trips come on top of it. */
const CAP_JOB_MS = 100;
const WORKER_TS = new URL('../test/flow-control/flow-control-worker.ts', import.meta.url).pathname;

type Fairness = 'none' | 'tenant';

async function withDatabase<T>(server: PgServer, name: string, fn: (url: string, pool: pg.Pool) => Promise<T>): Promise<T> {
  const url = await server.createDatabase(`${name}_${process.pid}`);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  try {
    const migrator = createBaton({ connectionString: url });
    await migrator.migrate();
    await migrator.stop();
    return await fn(url, pool);
  } finally {
    await pool.end();
    await server.dropDatabase(`${name}_${process.pid}`);
  }
}

const count = async (pool: pg.Pool, where: string) =>
  (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM baton.jobs WHERE ${where}`)).rows[0]!.n;

async function until(pred: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

// ---- drain ---------------------------------------------------------------------------------

async function drain(server: PgServer, fairness: Fairness): Promise<number> {
  return withDatabase(server, 'bench_flow_drain', async (url, pool) => {
    await pool.query(
      `INSERT INTO baton.jobs (queue, tenant_id, job_type) SELECT 'bench', 't' || (g % 10), 'noop' FROM generate_series(1, $1::int) g`,
      [DRAIN],
    );
    await pool.query('ANALYZE baton.jobs');
    let done = 0;
    let finished: () => void = () => undefined;
    const all = new Promise<void>((r) => {
      finished = r;
    });
    const worker = createBaton({
      connectionString: url,
      queues: { bench: 500 },
      poolSize: 10,
      fairness,
      retention: { succeededMs: null },
      handlers: {
        noop: () => {
          if (++done === DRAIN) finished();
        },
      },
    });
    const t0 = nowMs();
    await worker.start();
    await all;
    await until(async () => (await count(pool, `state = 'succeeded'`)) === DRAIN, 60_000, 'the drain to be written');
    const s = (nowMs() - t0) / 1000;
    await worker.stop();
    return Math.round(DRAIN / s);
  });
}

// ---- fairness latency ---------------------------------------------------------------------

interface FairnessRun {
  fairness: Fairness;
  idle: Distribution;
  b: Distribution;
  /** B's jobs not started when the backlog ran out (counted in the distribution at their real start). */
  aDrainSeconds: number;
}

const latencies = async (pool: pg.Pool, tenant: string) =>
  (
    await pool.query<{ ms: number }>(
      `SELECT date_part('epoch', started_at - created_at) * 1000 AS ms FROM baton.jobs WHERE tenant_id = $1 AND started_at IS NOT NULL`,
      [tenant],
    )
  ).rows.map((r) => r.ms);

async function fairnessRun(server: PgServer, fairness: Fairness): Promise<FairnessRun> {
  return withDatabase(server, 'bench_flow_fair', async (url, pool) => {
    const worker = createBaton({
      connectionString: url,
      queues: { bench: 50 },
      poolSize: 6,
      fairness,
      retention: { succeededMs: null },
      handlers: { work: () => sleep(5) },
    });
    const producer = createBaton({ connectionString: url, poolSize: 2 });
    await worker.start();
    // Idle start latency: B alone, 10 jobs/s for 3 s.
    for (let i = 0; i < 30; i++) {
      await producer.enqueue({ jobType: 'work', queue: 'bench', tenantId: 'idle' });
      await sleep(100);
    }
    await until(async () => (await count(pool, `tenant_id = 'idle' AND state = 'succeeded'`)) === 30, 30_000, 'the idle jobs');
    await worker.stop();
    // A's backlog, then a fresh worker: B enqueues 10 jobs/s for 10 s while A drains.
    await pool.query(`INSERT INTO baton.jobs (queue, tenant_id, job_type) SELECT 'bench', 'a', 'work' FROM generate_series(1, $1::int)`, [
      BACKLOG,
    ]);
    await pool.query('ANALYZE baton.jobs');
    const worker2 = createBaton({
      connectionString: url,
      queues: { bench: 50 },
      poolSize: 6,
      fairness,
      retention: { succeededMs: null },
      handlers: { work: () => sleep(5) },
    });
    const t0 = nowMs();
    await worker2.start();
    for (let i = 0; i < 100; i++) {
      await producer.enqueue({ jobType: 'work', queue: 'bench', tenantId: 'b' });
      await sleep(100);
    }
    await until(async () => (await count(pool, `tenant_id = 'a' AND state <> 'succeeded'`)) === 0, 600_000, "A's backlog");
    const aDrainSeconds = (nowMs() - t0) / 1000;
    await until(async () => (await count(pool, `tenant_id = 'b' AND state = 'succeeded'`)) === 100, 60_000, "B's jobs");
    await worker2.stop();
    await producer.stop();
    return { fairness, idle: distribution(await latencies(pool, 'idle')), b: distribution(await latencies(pool, 'b')), aDrainSeconds };
  });
}

// ---- processes -----------------------------------------------------------------------------

async function fleet(url: string, dir: string, n: number, concurrency: number): Promise<{ logs: string[]; children: ChildProcess[] }> {
  const logs: string[] = [];
  const children: ChildProcess[] = [];
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const log = path.join(dir, `w${i}.jsonl`);
      logs.push(log);
      const child = spawn(process.execPath, ['--import', 'tsx', WORKER_TS], {
        env: { ...process.env, FLOW_DB_URL: url, FLOW_LOG: log, FLOW_WORKER: `w${i}`, FLOW_CONCURRENCY: String(concurrency) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      await new Promise<void>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`worker w${i} exited (${code})`)));
        createInterface({ input: child.stdout! }).on('line', (l) => l === 'ready' && resolve());
      });
    }),
  );
  return { logs, children };
}

async function stopFleet(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((r) => {
          if (c.exitCode !== null) return r();
          c.once('exit', () => r());
          c.kill('SIGTERM');
        }),
    ),
  );
}

interface CapRun {
  peak: number;
  utilisation: number;
  jobs: number;
  seconds: number;
}

async function capRun(server: PgServer): Promise<CapRun> {
  return withDatabase(server, 'bench_flow_cap', async (url, pool) => {
    const JOBS = 300;
    await pool.query(`INSERT INTO baton.flow_keys (pattern, concurrency_limit) VALUES ('vendor:*', 5)`);
    await pool.query(`INSERT INTO baton.flow_queues (queue, keyed) VALUES ('flow', true)`);
    await pool.query(
      `INSERT INTO baton.jobs (queue, job_type, payload, concurrency_key) SELECT 'flow', 'work', $2::jsonb, 'vendor:x' FROM generate_series(1, $1::int)`,
      [JOBS, JSON.stringify({ ms: CAP_JOB_MS })],
    );
    const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-bench-flow-'));
    try {
      const f = await fleet(url, dir, 4, 4);
      await until(async () => (await count(pool, `state = 'succeeded'`)) === JOBS, 300_000, 'the capped jobs');
      await stopFleet(f.children);
      const runs = readRuns(f.logs, new Map());
      const from = Math.min(...runs.map((r) => r.start));
      const to = Math.max(...runs.map((r) => r.end));
      return { peak: peakRunning(runs), utilisation: utilisation(runs, 5, from, to), jobs: runs.length, seconds: (to - from) / 1000 };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

interface RateRun {
  limitPerSec: number;
  /** Starts per second after the first full bucket, from the first start after it to the last. */
  startsPerSec: number;
  /** Most starts in any 1 s window (a full bucket plus a period's refill at most: 200). */
  peakPerSecond: number;
  jobs: number;
}

async function rateRun(server: PgServer): Promise<RateRun> {
  return withDatabase(server, 'bench_flow_rate', async (url, pool) => {
    const JOBS = 1_100;
    await pool.query(`INSERT INTO baton.flow_queues (queue, rate_limit, rate_period_ms) VALUES ('flow', 100, 1000)`);
    await pool.query(
      `INSERT INTO baton.jobs (queue, job_type, payload) SELECT 'flow', 'work', '{"ms": 1}' FROM generate_series(1, $1::int)`,
      [JOBS],
    );
    const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-bench-flow-'));
    try {
      const f = await fleet(url, dir, 4, 50);
      await until(async () => (await count(pool, `state = 'succeeded'`)) === JOBS, 300_000, 'the rate-limited jobs');
      await stopFleet(f.children);
      const starts = readRuns(f.logs, new Map())
        .map((r) => r.start)
        .sort((a, b) => a - b);
      // The first 100 empty the full bucket at once; the rest follow the refill.
      const steady = starts.slice(100);
      const startsPerSec = (steady.length - 1) / ((steady.at(-1)! - steady[0]!) / 1000);
      const runs = starts.map((s) => ({ job: '', attempt: 1, worker: '', start: s, end: s }));
      return {
        limitPerSec: 100,
        startsPerSec: Math.round(startsPerSec * 10) / 10,
        peakPerSecond: peakStartsPerWindow(runs, 1000),
        jobs: starts.length,
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

// ---- main ----------------------------------------------------------------------------------

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const r1 = (x: number) => Math.round(x * 10) / 10;

async function main(): Promise<void> {
  const server = await openServer('cluster');
  try {
    const machine = await machineRecord(server);
    const out: Record<string, unknown> = {
      command: `npm run bench:flow -- ${process.argv.slice(2).join(' ')}`.trim(),
      commit: machine.gitCommit + (machine.gitDirty ? ' (dirty)' : ''),
      at: new Date().toISOString(),
      machine,
    };
    const drains: Array<{ round: number; none: number; tenant: number; ratio: number }> = [];
    if (PARTS.includes('drain')) {
      for (let round = 1; round <= RUNS; round++) {
        // Alternate the order, so a trend in the machine's load does not favour one mode.
        const order: Fairness[] = round % 2 ? ['none', 'tenant'] : ['tenant', 'none'];
        const got: Record<Fairness, number> = { none: 0, tenant: 0 };
        for (const f of order) got[f] = await drain(server, f);
        drains.push({ round, ...got, ratio: Math.round((got.tenant / got.none) * 1000) / 1000 });
        console.log('drain', drains.at(-1));
      }
      out.drain = { jobs: DRAIN, tenants: 10, rounds: drains, medianRatio: median(drains.map((d) => d.ratio)) };
    }
    if (PARTS.includes('fairness')) {
      const runs: FairnessRun[] = [];
      for (const f of ['tenant', 'none'] as const) {
        runs.push(await fairnessRun(server, f));
        console.log('fairness', f, runs.at(-1));
      }
      out.fairness = { backlog: BACKLOG, runs };
    }
    if (PARTS.includes('cap')) {
      const runs: CapRun[] = [];
      for (let i = 0; i < RUNS; i++) {
        runs.push(await capRun(server));
        console.log('cap', runs.at(-1));
      }
      out.cap = { cap: 5, processes: 4, slotsPerProcess: 4, jobMs: CAP_JOB_MS, runs };
    }
    if (PARTS.includes('rate')) {
      const runs: RateRun[] = [];
      for (let i = 0; i < RUNS; i++) {
        runs.push(await rateRun(server));
        console.log('rate', runs.at(-1));
      }
      out.rate = { processes: 4, runs };
    }
    out.loadAvgAtEnd = os.loadavg().map((x) => Math.round(x * 100) / 100);
    const base = await writeResults(flags.out, 'flow', out, report(out));
    console.log(`wrote ${base}.json and .md`);
  } finally {
    await server.close();
  }
}

/** The Markdown report, generated from the JSON only. */
export function report(o: Record<string, any>): string {
  const lines = [
    '# Flow control bench',
    '',
    `Command: \`${o.command}\`, commit ${o.commit ?? '(not given)'}, ${o.at}.`,
    '',
    `Machine: ${o.machine.cpuModel}, ${o.machine.cores} cores, ${o.machine.memoryGiB} GiB, ${o.machine.os}, Node ${o.machine.node}, PostgreSQL ${o.machine.postgres.version}; load average at start ${o.machine.loadAvgAtStart?.join(' / ')}, at end ${o.loadAvgAtEnd?.join(' / ')} (a shared machine: other work ran alongside).`,
    '',
  ];
  if (o.drain) {
    lines.push(
      `## Drain: ${o.drain.jobs.toLocaleString('en')} no-op jobs over ${o.drain.tenants} tenants, one worker (500 slots)`,
      '',
      '| round | fairness none (FIFO) jobs/s | fairness tenant jobs/s | tenant / none |',
      '| ---: | ---: | ---: | ---: |',
      ...o.drain.rounds.map((d: any) => `| ${d.round} | ${d.none} | ${d.tenant} | ${d.ratio} |`),
      '',
      `Median ratio (fair / FIFO, each round's two modes measured back to back): **${o.drain.medianRatio}** (target at least 0.85).`,
      '',
    );
  }
  if (o.fairness) {
    lines.push(
      `## Fairness: tenant A's backlog of ${o.fairness.backlog.toLocaleString('en')} jobs, tenant B enqueuing 10 jobs/s`,
      '',
      'Start latency = started_at − created_at (database clock), ms. Handlers sleep 5 ms; one worker, 50 slots.',
      '',
      "| fairness | idle p50 | idle p99 | B p50 | B p99 | B p99 / idle p99 | A's backlog drained in (s) |",
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...o.fairness.runs.map(
        (r: any) =>
          `| ${r.fairness} | ${r1(r.idle.p50)} | ${r1(r.idle.p99)} | ${r1(r.b.p50)} | ${r1(r.b.p99)} | ${r1(r.b.p99 / r.idle.p99)} | ${r1(r.aDrainSeconds)} |`,
      ),
      '',
    );
  }
  if (o.cap) {
    lines.push(
      `## A concurrency key capped at ${o.cap.cap} over ${o.cap.processes} worker processes (${o.cap.slotsPerProcess} slots each), jobs of ${o.cap.jobMs} ms`,
      '',
      '| run | jobs | peak running (execution log) | utilisation of the cap | seconds |',
      '| ---: | ---: | ---: | ---: | ---: |',
      ...o.cap.runs.map(
        (r: any, i: number) => `| ${i + 1} | ${r.jobs} | ${r.peak} | ${Math.round(r.utilisation * 1000) / 10}% | ${r1(r.seconds)} |`,
      ),
      '',
    );
  }
  if (o.rate) {
    lines.push(
      `## A rate limit of 100 starts/s over ${o.rate.processes} worker processes`,
      '',
      'The bucket holds 100: the first 100 start at once; the rest follow the refill.',
      '',
      '| run | jobs | starts/s after the first bucket | most starts in any 1 s |',
      '| ---: | ---: | ---: | ---: |',
      ...o.rate.runs.map((r: any, i: number) => `| ${i + 1} | ${r.jobs} | ${r.startsPerSec} | ${r.peakPerSecond} |`),
      '',
    );
  }
  return `${lines.join('\n')}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
