// Drains N jobs from a table ANALYZEd after the enqueue (as autovacuum leaves a production
// table), in one process with one Baton engine: the throughput scenario's fresh tables have
// no statistics, so a plan that only goes wrong with statistics never shows there.
// Usage: npx tsx bench/drain-analyzed.ts [jobs=20000] [concurrency=500] [prof]
// Prints the CPU time the worker and this host's postgres processes spent on the drain.
// With `prof`, also the worker's CPU time by function (self time, top 40).

import { Session } from 'node:inspector/promises';
import pg from 'pg';
import { createBaton } from '../src/index.ts';
import { postgresCpuMs } from './host-cpu.ts';
import { openServer } from './server.ts';

const N = Number(process.argv[2] ?? 20_000);
const C = Number(process.argv[3] ?? 500);
const PROF = process.argv[4] === 'prof';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

const server = await openServer();
try {
  const url = await server.createDatabase(`bench_drain_${process.pid}`);
  let done = 0;
  let allRan!: () => void;
  const ran = new Promise<void>((r) => (allRan = r));
  const baton = createBaton({
    connectionString: url,
    poolSize: 10,
    queues: { q: C },
    handlers: { x: () => void (++done === N && allRan()) },
  });
  await baton.migrate();
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  // pool.end() resolves before its socket closes; server.close()'s DROP ... WITH (FORCE) may reach it.
  pool.on('error', () => undefined);
  await pool.query(
    `INSERT INTO baton.jobs (queue, job_type, payload) SELECT 'q', 'x', jsonb_build_object('seq', g) FROM generate_series(1, $1::int) g`,
    [N],
  );
  await pool.query('VACUUM ANALYZE baton.jobs');
  const session = new Session();
  session.connect();
  if (PROF) {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const pg0 = postgresCpuMs();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await baton.start();
  await ran;
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const pg1 = postgresCpuMs();
  const profile = PROF ? (await session.post('Profiler.stop')).profile : null;
  await baton.stop();
  const ok = (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM baton.jobs WHERE state = 'succeeded'`)).rows[0]!.n;
  await pool.end();
  process.stdout.write(
    `${N} jobs, concurrency ${C}: handlers all ran in ${ms.toFixed(0)} ms = ${Math.round(N / (ms / 1000))} jobs/s; succeeded rows at stop: ${ok}\n`,
  );
  const pgCpu = pg0 === null || pg1 === null ? 'n/a' : `${Math.round(pg1 - pg0)} ms`;
  process.stdout.write(
    `CPU during the drain: worker ${Math.round((cpu.user + cpu.system) / 1000)} ms, postgres processes on this host ${pgCpu}\n`,
  );
  if (ok !== N) process.exitCode = 1;
  if (profile) {
    const byId = new Map((profile.nodes as ProfileNode[]).map((n) => [n.id, n]));
    const self = new Map<string, number>();
    profile.samples!.forEach((id, i) => {
      const f = byId.get(id)!.callFrame;
      const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/.*node_modules\//, '').replace(`${process.cwd()}/`, '')}:${f.lineNumber}`;
      self.set(key, (self.get(key) ?? 0) + profile.timeDeltas![i]! / 1000);
    });
    for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 40)) process.stdout.write(`${v.toFixed(1).padStart(8)} ms  ${k}\n`);
  }
} finally {
  await server.close();
}
process.exit();
