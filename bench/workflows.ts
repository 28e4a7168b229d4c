// Workflow benchmark: 5-step no-op workflows next to plain no-op jobs in the same run
// (runs/s, steps/s, jobs/s, alternating, medians), event-sent -> waiting run resumed
// latency next to plain job start latency, and N sleeping runs: worker slots and
// database connections held, table bytes per waiting run. Each part on a fresh database of
// the bench's own server (bench/server.ts: started from this host's binaries, tuned as a user
// tunes one, durability and autovacuum at PostgreSQL's defaults); --server-url uses a given one.
// Usage: npx tsx bench/workflows.ts [--runs 3] [--jobs 2000] [--sleepers 10000] [--latency 1000] [--out results] [--server-url URL]
//   [--profile-sql]

import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { type Baton, createBaton } from '../src/index.ts';
import { machineRecord } from './machine.ts';
import { openServer, type PgServer } from './server.ts';
import { type SqlProfileRow, topStatements } from './sql-profile.ts';
import { distribution, nowMs } from './stats.ts';

const argv = process.argv.slice(2);
const arg = (name: string, dflt: number): number => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : dflt;
};
const RUNS = arg('runs', 3);
const JOBS = arg('jobs', 2_000);
const SLEEPERS = arg('sleepers', 10_000);
// A p99 of 200 samples is their third-highest value: on a quiet machine it moved between 1.6x and
// 2.3x the job start's from run to run; of 1,000 it held within 1.61x to 1.68x.
const LATENCY_SAMPLES = arg('latency', 1_000);
const outIdx = argv.indexOf('--out');
const OUT = outIdx >= 0 ? (argv[outIdx + 1] as string) : 'results';
const urlIdx = argv.indexOf('--server-url');
const SERVER_URL = urlIdx >= 0 ? (argv[urlIdx + 1] as string) : null;
/** One more workflow drain, not counted, with pg_stat_statements: its statements per run. */
const PROFILE_SQL = argv.includes('--profile-sql');
const CONCURRENCY = 20;
const POOL = 10;
let server: PgServer;
const workflowTrouble: string[] = [];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function withDb<T>(tag: string, fn: (url: string) => Promise<T>): Promise<T> {
  const name = `baton_bench_wf_${tag}_${process.pid}`;
  await server.dropDatabase(name);
  const url = await server.createDatabase(name);
  try {
    return await fn(url);
  } finally {
    await server.dropDatabase(name);
  }
}

async function until(cond: () => Promise<boolean>, what: string, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function engine(url: string, concurrency = CONCURRENCY): Baton {
  const b = createBaton({ connectionString: url, poolSize: POOL, queues: { default: concurrency }, pollIntervalMs: 200 });
  b.workflow('five', async (ctx) => {
    for (let i = 0; i < 5; i++) await ctx.step(`s${i}`, () => i);
  });
  return b;
}

/** Plain no-op jobs drained by one worker: jobs/s. */
async function plainJobs(url: string): Promise<number> {
  let done = 0;
  const b = createBaton({ connectionString: url, poolSize: POOL, queues: { default: CONCURRENCY }, handlers: { noop: () => null } });
  await b.migrate();
  b.events.on('succeeded', () => done++);
  await b.enqueueMany(Array.from({ length: JOBS }, () => ({ jobType: 'noop' })));
  const t0 = nowMs();
  await b.start();
  await until(async () => done >= JOBS, 'plain jobs');
  const s = (nowMs() - t0) / 1000;
  await b.stop();
  return JOBS / s;
}

/** 5-step no-op workflows (JOBS / 5 runs, so as many steps as the plain mode has jobs): runs/s. */
async function workflows(url: string): Promise<number> {
  const n = Math.round(JOBS / 5);
  const b = engine(url);
  // A failed execution or an engine error slows a drain down: counted, so a slow run says why.
  b.events.on('retried', (e) => void workflowTrouble.push(`retried: ${String(e.error)}`));
  b.events.on('error', (e) => void workflowTrouble.push(`${e.where}: ${String(e.error)}`));
  await b.migrate();
  for (let i = 0; i < n; i += 100) await Promise.all(Array.from({ length: Math.min(100, n - i) }, () => b.startWorkflow('five')));
  const t0 = nowMs();
  await b.start();
  await until(async () => (await b.workflows.countRunsByState()).find((c) => c.state === 'succeeded')?.n === n, 'workflows');
  const s = (nowMs() - t0) / 1000;
  await b.stop();
  return n / s;
}

/** Event sent -> the step after the wait starts (ms), and enqueue -> plain handler start (ms), in one engine. */
async function latencies(url: string): Promise<{ event: number[]; job: number[] }> {
  const resumed = new Map<string, number>();
  const started = new Map<string, number>();
  const b = createBaton({
    connectionString: url,
    poolSize: POOL,
    queues: { default: CONCURRENCY },
    handlers: { mark: (ctx) => void started.set(ctx.job.id, nowMs()) },
  });
  b.workflow('wait', async (ctx) => {
    await ctx.waitForEvent('go', 'go');
    await ctx.step('after', () => {
      if (!resumed.has(ctx.runId)) resumed.set(ctx.runId, nowMs());
    });
  });
  await b.migrate();
  await b.start();
  const event: number[] = [];
  const job: number[] = [];
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    const { run } = await b.startWorkflow('wait');
    await until(async () => (await b.workflows.getRun(run.id))?.state === 'waiting', 'a waiting run', 30_000);
    const t0 = nowMs();
    await b.sendEvent(run.id, 'go');
    await until(async () => resumed.has(run.id), 'a resume', 30_000);
    event.push((resumed.get(run.id) as number) - t0);
    const t1 = nowMs();
    const { job: j } = await b.enqueue({ jobType: 'mark' });
    await until(async () => started.has(j.id), 'a job start', 30_000);
    job.push((started.get(j.id) as number) - t1);
  }
  await b.stop();
  return { event, job };
}

/** SLEEPERS runs asleep for an hour: slots in flight, connections held above the idle baseline, bytes per run. */
async function sleepers(url: string) {
  const b = createBaton({ connectionString: url, poolSize: POOL, queues: { default: CONCURRENCY }, pollIntervalMs: 200 });
  b.workflow('nap', (ctx) => ctx.sleep('nap', 3_600_000));
  await b.migrate();
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  const dbName = new URL(url).pathname.slice(1);
  // Open connections, and those doing something (not idle in the pool).
  const connections = async () => {
    const r = await probe.query(
      `SELECT count(*)::int AS n, (count(*) FILTER (WHERE state <> 'idle'))::int AS busy
       FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
      [dbName],
    );
    return { open: Number(r.rows[0].n), busy: Number(r.rows[0].busy) };
  };
  const bytes = async () =>
    Number(
      (
        await probe.query(
          `SELECT sum(pg_total_relation_size(c.oid))::bigint AS n FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
           WHERE s.nspname = 'baton' AND c.relname IN ('jobs', 'workflow_runs', 'workflow_steps', 'workflow_events') AND c.relkind = 'r'`,
        )
      ).rows[0].n,
    );
  await b.start();
  // Idle baseline: the started engine with nothing to do, its pool warmed by a few statements.
  await b.workflows.countRunsByState();
  const idleConnections = await connections();
  const bytesBefore = await bytes();
  for (let i = 0; i < SLEEPERS; i += 100) {
    await Promise.all(Array.from({ length: Math.min(100, SLEEPERS - i) }, () => b.startWorkflow('nap')));
  }
  await until(async () => (await b.workflows.countRunsByState()).find((c) => c.state === 'sleeping')?.n === SLEEPERS, 'sleepers');
  await probe.query('VACUUM baton.jobs, baton.workflow_runs, baton.workflow_steps');
  const result = {
    sleepingRuns: SLEEPERS,
    slotsInFlight: b.stats().slots.default?.inFlight ?? -1,
    liveLeases: Number((await probe.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE state IN ('leased', 'running')`)).rows[0].n),
    idleConnections,
    connectionsWhileSleeping: await connections(),
    bytesPerSleepingRun: Math.round(((await bytes()) - bytesBefore) / SLEEPERS),
  };
  await probe.end();
  await b.stop({ drainMs: 1_000 });
  return result;
}

async function main(): Promise<void> {
  const startedAt = new Date();
  server = await openServer(
    SERVER_URL ? { url: SERVER_URL } : 'cluster',
    PROFILE_SQL ? { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' } : {},
  );
  if (PROFILE_SQL) await server.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  try {
    await measure(startedAt);
  } finally {
    await server.close();
  }
}

async function measure(startedAt: Date): Promise<void> {
  const machine = await machineRecord(server);
  const jobRates: number[] = [];
  const runRates: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    jobRates.push(await withDb(`jobs${i}`, plainJobs));
    runRates.push(await withDb(`wf${i}`, workflows));
    process.stderr.write(
      `run ${i + 1}/${RUNS}: jobs/s ${jobRates.at(-1)?.toFixed(0)}, runs/s ${runRates.at(-1)?.toFixed(0)}, retries and errors so far ${workflowTrouble.length}\n`,
    );
  }
  let sqlProfile: Array<SqlProfileRow & { perRun: number }> = [];
  if (PROFILE_SQL) {
    const n = Math.round(JOBS / 5);
    await withDb('profile', async (url) => {
      await server.query('SELECT pg_stat_statements_reset()');
      await workflows(url);
      sqlProfile = (await topStatements(server, 12)).map((r) => ({ ...r, perRun: r.calls / n }));
    });
  }
  const lat = await withDb('lat', latencies);
  const sleep = await withDb('sleep', sleepers);
  const jobsPerSec = median(jobRates);
  const runsPerSec = median(runRates);
  const ratio = (a: number[], b: number[]) => a.map((x, i) => x / (b[i] as number));
  const report = {
    command: `npx tsx bench/workflows.ts ${argv.join(' ')}`.trim(),
    startedAt: startedAt.toISOString(),
    machine,
    params: { runs: RUNS, jobs: JOBS, stepsPerRun: 5, concurrency: CONCURRENCY, poolSize: POOL, latencySamples: LATENCY_SAMPLES },
    throughput: {
      jobsPerSec: { median: jobsPerSec, runs: jobRates },
      runsPerSec: { median: runsPerSec, runs: runRates },
      stepsPerSec: { median: runsPerSec * 5, runs: runRates.map((r) => r * 5) },
      stepsOverJobs: {
        median: median(
          ratio(
            runRates.map((r) => r * 5),
            jobRates,
          ),
        ),
        target: 0.4,
      },
    },
    latencyMs: {
      eventToResume: distribution(lat.event),
      jobStart: distribution(lat.job),
      p50Ratio: distribution(lat.event).p50 / distribution(lat.job).p50,
      p99Ratio: distribution(lat.event).p99 / distribution(lat.job).p99,
      target: 2,
    },
    sleepers: sleep,
    sqlProfile,
    workflowTrouble,
    loadAvgAtEnd: os.loadavg().map((x) => Math.round(x * 100) / 100),
  };
  const pgSettings = Object.entries(machine.postgres.settings)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  mkdirSync(OUT, { recursive: true });
  const stamp = startedAt.toISOString().slice(0, 16).replace(/[:T]/g, '-');
  const file = path.join(OUT, `workflows-${stamp}`);
  writeFileSync(`${file}.json`, `${JSON.stringify(report, null, 2)}\n`);
  const f = (x: number, d = 0) => x.toFixed(d);
  const md = `# Workflow benchmark ${report.startedAt}

Command: \`${report.command}\` at \`${machine.gitCommit.slice(0, 7)}${machine.gitDirty ? ' (dirty)' : ''}\`; ${machine.cores} cores (${machine.cpuModel}), Node ${machine.node},
load average at start ${machine.loadAvgAtStart.join(' / ')}, at end ${report.loadAvgAtEnd.join(' / ')}. Medians of ${RUNS} alternating runs; ratios within the same run.

Server: ${machine.postgres.version.split(',')[0]}, ${machine.postgres.source}. Settings in force: ${pgSettings}.

| Figure | Value |
|---|---|
| plain no-op jobs/s (${JOBS} jobs, ${CONCURRENCY} slots) | ${f(jobsPerSec)} |
| 5-step no-op workflow runs/s (${JOBS / 5} runs) | ${f(runsPerSec)} |
| workflow steps/s | ${f(runsPerSec * 5)} |
| steps/s ÷ jobs/s (target ≥ 0.40) | ${f(report.throughput.stepsOverJobs.median, 2)} |
| workflow executions retried or engine errors during the drains | ${workflowTrouble.length} |
| event sent → waiting run resumed, p50 / p99 ms (${LATENCY_SAMPLES} samples) | ${f(report.latencyMs.eventToResume.p50, 1)} / ${f(report.latencyMs.eventToResume.p99, 1)} |
| plain job start latency, p50 / p99 ms | ${f(report.latencyMs.jobStart.p50, 1)} / ${f(report.latencyMs.jobStart.p99, 1)} |
| resume ÷ job start, p50 / p99 (target ≤ 2) | ${f(report.latencyMs.p50Ratio, 2)} / ${f(report.latencyMs.p99Ratio, 2)} |
| sleeping runs | ${sleep.sleepingRuns} |
| worker slots in flight / live leases while they sleep | ${sleep.slotsInFlight} / ${sleep.liveLeases} |
| database connections open (busy): idle baseline / while they sleep | ${sleep.idleConnections.open} (${sleep.idleConnections.busy}) / ${sleep.connectionsWhileSleeping.open} (${sleep.connectionsWhileSleeping.busy}) |
| table bytes per sleeping run (jobs + runs + steps, with indexes and TOAST) | ${sleep.bytesPerSleepingRun} |
${
  sqlProfile.length === 0
    ? ''
    : `
Statements of one more workflow drain (${JOBS / 5} runs, not counted above), by server time (pg_stat_statements):

| calls | per run | total ms | mean ms | statement |
|---|---|---|---|---|
${sqlProfile.map((r) => `| ${r.calls} | ${r.perRun.toFixed(2)} | ${r.totalMs.toFixed(0)} | ${r.meanMs.toFixed(3)} | \`${r.query.slice(0, 120).replace(/\|/g, '\\|')}\` |`).join('\n')}
`
}`;
  writeFileSync(`${file}.md`, md);
  process.stdout.write(md);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
