// `npx tsx bench/cron.ts [--server cluster|embedded|<postgres url>] [--runs N]`: cron timing.
//   1. occurrence instant -> job pending (its insert committed), p50/p99, with 1 schedule
//      firing every second, 10,000 schedules spread over the minute (~167 due per second),
//      and 10,000 schedules all due at the same instant every 20 s (the burst: the tick's
//      cost per due schedule is the burst's last commit over its size);
//   2. leader kill -9 -> next occurrence enqueued by the new leader, next to the settings
//      that bound it (the leader lease's retry period, leaderLeaseMs / 10, and fastReclaimGraceMs).
// "Pending" is read from the engine's own 'enqueued' event, emitted once the insert has
// committed: the k-th insert statement (distinct created_at) is the k-th event.
// Writes results/cron-<time>.md and .json.

import { fork } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { FAST_RECLAIM_GRACE_MS_DEFAULT, LEADER_LEASE_MS_DEFAULT } from '../src/core/config.ts';
import { parseCron } from '../src/core/cron/expression.ts';
import { LEADER_RENEWALS_PER_LEASE } from '../src/core/leader-lease.ts';
import { cronChannelFor } from '../src/core/notifier.ts';
import { migrate } from '../src/db/migrate.ts';
import { type Baton, createBaton } from '../src/index.ts';
import { machineRecord } from './machine.ts';
import { openServer, type ServerChoice } from './server.ts';
import { type Distribution, distribution, spread } from './stats.ts';

const LEADER_RETRY_MS_DEFAULT = LEADER_LEASE_MS_DEFAULT / LEADER_RENEWALS_PER_LEASE;

const { values: args } = parseArgs({
  options: {
    server: { type: 'string', default: 'cluster' },
    runs: { type: 'string', default: '3' },
    kills: { type: 'string', default: '5' },
  },
});
const choice: ServerChoice = args.server === 'cluster' || args.server === 'embedded' ? args.server : { url: args.server as string };
const RUNS = Number(args.runs);
const KILLS = Number(args.kills);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Mode {
  id: string;
  title: string;
  schedules: number;
  cron: (i: number) => string;
  /** How long to measure (ms). */
  measureMs: number;
}
const MODES: Mode[] = [
  { id: 'one', title: '1 schedule, every second', schedules: 1, cron: () => '* * * * * *', measureMs: 20_000 },
  {
    id: 'spread',
    title: '10,000 schedules, each once a minute, spread over the seconds (~167 due per second)',
    schedules: 10_000,
    cron: (i) => `${i % 60} * * * * *`,
    measureMs: 30_000,
  },
  {
    id: 'burst',
    title: '10,000 schedules all due at the same instant, every 20 s',
    schedules: 10_000,
    cron: () => '*/20 * * * * *',
    measureMs: 41_000,
  },
];

interface ModeRun {
  latency: Distribution;
  /** Burst only: the last commit of each burst after its instant, per due schedule (ms). */
  perDueMs: number[];
  jobs: number;
}

async function measureMode(server: Awaited<ReturnType<typeof openServer>>, mode: Mode, run: number): Promise<ModeRun> {
  const dbName = `bench_cron_${mode.id}_${run}_${process.pid}`;
  const url = await server.createDatabase(dbName);
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  admin.on('error', () => undefined);
  let baton: Baton | null = null;
  try {
    await migrate(admin, { schema: 'baton' });
    const commits: number[] = [];
    baton = createBaton({
      connectionString: url,
      queues: { cron: 8 },
      handlers: { tick: () => null },
      poolSize: 6,
      deleteOnSuccess: false,
    });
    baton.events.on('enqueued', () => commits.push(Date.now()));
    // The engine first (its start is not what is measured), then the schedules, their first
    // occurrences LEAD_MS ahead; straight into the table (the bench measures the ticker, not
    // 10,000 upserts), then the NOTIFY an upsert would send.
    await baton.start();
    while (!baton.stats().leader) await sleep(20);
    const LEAD_MS = 5_000;
    const now = Date.now();
    const rows = Array.from({ length: mode.schedules }, (_, i) => {
      const cron = mode.cron(i);
      return { name: `s${i}`, cron, next: parseCron(cron, 'UTC').next(new Date(now + LEAD_MS)) as Date };
    });
    await admin.query(
      `INSERT INTO baton.schedules (tenant_id, name, cron, timezone, job_type, queue, next_fire_at)
       SELECT 'bench', n, c, 'UTC', 'tick', 'cron', t FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS x(n, c, t)`,
      [rows.map((r) => r.name), rows.map((r) => r.cron), rows.map((r) => r.next)],
    );
    await admin.query('SELECT pg_notify($1, $2)', [cronChannelFor('baton'), '']);
    const stopAt = now + LEAD_MS + mode.measureMs;
    await sleep(Math.max(0, stopAt + 2_000 - Date.now()));
    await baton.stop({ drainMs: 2_000 });
    baton = null;
    // created_at in microseconds: two statements within one millisecond stay apart.
    const r = await admin.query<{ run_at: Date; c: string }>(
      `SELECT run_at, (extract(epoch FROM created_at) * 1000000)::bigint::text AS c FROM baton.jobs ORDER BY created_at, id`,
    );
    const groups: Array<{ createdAt: string; runAts: number[] }> = [];
    for (const row of r.rows) {
      const c = row.c;
      const last = groups.at(-1);
      if (last && last.createdAt === c) last.runAts.push(row.run_at.getTime());
      else groups.push({ createdAt: c, runAts: [row.run_at.getTime()] });
    }
    if (groups.length !== commits.length) {
      throw new Error(`${mode.id}: ${groups.length} insert statements in the table but ${commits.length} enqueued events`);
    }
    const latencies: number[] = [];
    const bursts = new Map<number, number>();
    groups.forEach((g, k) => {
      for (const at of g.runAts) {
        if (at > stopAt) continue;
        latencies.push(commits[k]! - at);
        bursts.set(at, Math.max(bursts.get(at) ?? 0, commits[k]! - at));
      }
    });
    const perDueMs = mode.id === 'burst' ? [...bursts.values()].map((ms) => ms / mode.schedules) : [];
    return { latency: distribution(latencies), perDueMs, jobs: latencies.length };
  } finally {
    await baton?.stop({ drainMs: 0 }).catch(() => undefined);
    await admin.end();
    await server.dropDatabase(dbName).catch(() => undefined);
  }
}

interface Child {
  proc: ReturnType<typeof fork>;
  leader: boolean;
  onLeader: Promise<void>;
}
function spawnChild(url: string): Promise<Child> {
  const proc = fork(path.join(import.meta.dirname, 'child/cron-leader.ts'), [], {
    env: { ...process.env, BENCH_DB_URL: url },
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let resolveLeader: () => void = () => undefined;
  const child: Child = { proc, leader: false, onLeader: new Promise<void>((r) => (resolveLeader = r)) };
  proc.on('message', (m: { type: string; leader?: boolean }) => {
    if ((m.type === 'leadership' || m.type === 'ready') && m.leader) {
      child.leader = true;
      resolveLeader();
    }
  });
  return new Promise((resolve, reject) => {
    proc.on('message', (m: { type: string }) => m.type === 'ready' && resolve(child));
    proc.once('exit', (code) => reject(new Error(`child exited ${code}`)));
  });
}

/** kill -9 of the leader while a schedule fires every second: time to the next job, and that job's lateness. */
async function measureFailover(
  server: Awaited<ReturnType<typeof openServer>>,
): Promise<Array<{ killToJobMs: number; latenessMs: number }>> {
  const dbName = `bench_cron_failover_${process.pid}`;
  const url = await server.createDatabase(dbName);
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  admin.on('error', () => undefined);
  const out: Array<{ killToJobMs: number; latenessMs: number }> = [];
  const children: Child[] = [];
  try {
    await migrate(admin, { schema: 'baton' });
    const producer = createBaton({ connectionString: url, poolSize: 1 });
    await producer.cron.upsert({ name: 'every-second', cron: '* * * * * *', timezone: 'UTC', jobType: 'tick', queue: 'cron' });
    await producer.stop();
    let leader = await spawnChild(url);
    children.push(leader);
    await leader.onLeader;
    for (let i = 0; i < KILLS; i++) {
      const follower = await spawnChild(url);
      children.push(follower);
      // Kill at a varying phase of the second.
      await sleep(2_000 + ((i * 137) % 1000));
      const killedAt = Date.now();
      leader.proc.kill('SIGKILL');
      let job: { created_at: Date; run_at: Date } | undefined;
      while (!job && Date.now() - killedAt < 15_000) {
        const r = await admin.query<{ created_at: Date; run_at: Date }>(
          'SELECT created_at, run_at FROM baton.jobs WHERE created_at > $1 ORDER BY created_at LIMIT 1',
          [new Date(killedAt)],
        );
        job = r.rows[0];
        if (!job) await sleep(10);
      }
      if (!job) throw new Error('no occurrence fired within 15 s of the leader kill');
      out.push({ killToJobMs: job.created_at.getTime() - killedAt, latenessMs: job.created_at.getTime() - job.run_at.getTime() });
      await follower.onLeader;
      leader = follower;
    }
  } finally {
    for (const c of children) c.proc.kill('SIGKILL');
    await admin.end();
    await sleep(500);
    await server.dropDatabase(dbName).catch(() => undefined);
  }
  return out;
}

const startedAt = new Date();
const server = await openServer(choice);
try {
  const machine = await machineRecord(server);
  const modes: Record<
    string,
    {
      title: string;
      runs: ModeRun[];
      p50: ReturnType<typeof spread>;
      p99: ReturnType<typeof spread>;
      perDueMs: ReturnType<typeof spread> | null;
    }
  > = {};
  for (let run = 0; run < RUNS; run++) {
    for (const mode of MODES) {
      console.log(`run ${run + 1}/${RUNS}: ${mode.title}`);
      const r = await measureMode(server, mode, run);
      console.log(`  ${r.jobs} jobs; instant -> pending p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, max ${r.latency.max} ms`);
      modes[mode.id] ??= { title: mode.title, runs: [], p50: spread([]), p99: spread([]), perDueMs: null };
      modes[mode.id]!.runs.push(r);
    }
  }
  for (const m of Object.values(modes)) {
    m.p50 = spread(m.runs.map((r) => r.latency.p50));
    m.p99 = spread(m.runs.map((r) => r.latency.p99));
    const per = m.runs.flatMap((r) => r.perDueMs);
    m.perDueMs = per.length > 0 ? spread(per) : null;
  }
  console.log('failover: kill -9 of the leader while a schedule fires every second');
  const failover = await measureFailover(server);
  const report = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    loadAvgAtEnd: os.loadavg(),
    command: `npx tsx bench/cron.ts ${process.argv.slice(2).join(' ')}`.trim(),
    machine,
    modes,
    failover: {
      samples: failover,
      killToJob: spread(failover.map((f) => f.killToJobMs)),
      lateness: spread(failover.map((f) => f.latenessMs)),
      leaderRetryMs: LEADER_RETRY_MS_DEFAULT,
      fastReclaimGraceMs: FAST_RECLAIM_GRACE_MS_DEFAULT,
    },
  };
  const f = (n: number) => (Number.isNaN(n) ? '-' : n.toFixed(n < 10 ? 2 : 0));
  const lines = [
    `# Cron timing, ${report.startedAt}`,
    '',
    `Command: \`${report.command}\`. Machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.os}, Node ${machine.node}; load average at start ${machine.loadAvgAtStart.join(' / ')}, at end ${report.loadAvgAtEnd.map((x) => x.toFixed(2)).join(' / ')}. PostgreSQL: ${machine.postgres.source}. Commit ${machine.gitCommit}${machine.gitDirty ? ' (dirty)' : ''}.`,
    '',
    "Occurrence instant -> job pending (its insert committed, from the engine's `enqueued` event), one engine that leads and works the queue. Medians over runs, [min-max] in brackets.",
    '',
    '| schedules | jobs per run | p50 (ms) | p99 (ms) | tick cost per due schedule (ms) |',
    '| --- | --- | --- | --- | --- |',
    ...Object.values(modes).map(
      (m) =>
        `| ${m.title} | ${m.runs.map((r) => r.jobs).join(', ')} | ${f(m.p50.median)} [${f(m.p50.min)}-${f(m.p50.max)}] | ${f(m.p99.median)} [${f(m.p99.min)}-${f(m.p99.max)}] | ${m.perDueMs ? `${f(m.perDueMs.median)} [${f(m.perDueMs.min)}-${f(m.perDueMs.max)}]` : '-'} |`,
    ),
    '',
    `Leader kill -9 -> next occurrence enqueued by the new leader (schedule every second, ${failover.length} kills at varying phases): median ${f(report.failover.killToJob.median)} ms [${f(report.failover.killToJob.min)}-${f(report.failover.killToJob.max)}]; that job's lateness after its instant, median ${f(report.failover.lateness.median)} ms [${f(report.failover.lateness.min)}-${f(report.failover.lateness.max)}]. Bounds: the follower tries the leader lease every ${LEADER_RETRY_MS_DEFAULT} ms (a dead holder's lease at once); fastReclaimGraceMs is ${FAST_RECLAIM_GRACE_MS_DEFAULT} ms (it bounds the dead leader's leases, not the ticking).`,
    '',
  ];
  const stamp = startedAt.toISOString().slice(0, 16).replace(/[:T]/g, '-');
  const dir = path.resolve(import.meta.dirname, '../results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `cron-${stamp}.json`), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(path.join(dir, `cron-${stamp}.md`), lines.join('\n'));
  console.log(lines.join('\n'));
} finally {
  await server.close();
}
