// Worker process of one run: sets up the fresh database, then either drains N jobs
// enqueued up front (throughput) or sits idle and records handler start times (latency);
// or, as one of several processes on one database (shared), records its handler starts.

import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import pg from 'pg';
import { postgresCpuMs } from '../host-cpu.ts';
import { nowMs } from '../stats.ts';
import { workerFor } from '../systems/index.ts';
import type { VerifyResult, WorkerSide } from '../systems/types.ts';
import { variantById } from '../systems/variants.ts';
import { next, send, serve, until } from './ipc.ts';
import { startPgTrace } from './pg-trace.ts';

/**
 * A capped run is stopped mid-stream: a job whose handler had started may be handed back
 * to the queue by the system's shutdown instead of being recorded (at-least-once). That is
 * no loss as long as every job is either done once or still queued, no job ran twice, and
 * the gap is at most the jobs that can be in flight.
 */
async function stoppedMidStream(w: WorkerSide, executed: number[], n: number, strict: VerifyResult): Promise<VerifyResult> {
  const unique = new Set(executed).size;
  const done = await w.countDone(n);
  const gap = unique - done;
  const ok = unique === executed.length && strict.done + strict.remaining === n && gap >= 0 && gap <= IN_FLIGHT_BOUND;
  return {
    ...strict,
    ok,
    detail: ok ? `ok (${gap} job(s) running at the stop were handed back to the queue)` : strict.detail,
  };
}

const IN_FLIGHT_BOUND = 600;

/**
 * BENCH_DRAIN_PERF=dir: `perf record` of the whole host (every process, call graphs) for the
 * drain alone, not the database's creation, migration or the enqueue; read with `perf report
 * --comm postgres`. The server's own CPU is only attributable this way (its symbols, not SQL).
 */
async function startPerf(file: string): Promise<{ stop: () => Promise<void> }> {
  const child = spawn('perf', ['record', '-a', '-g', '-F', '999', '-o', file], { stdio: 'ignore' });
  let failed: Error | null = null;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (err) => {
      failed = err;
      resolve();
    });
  });
  // perf gives no sign that it has attached to every CPU: the drain starts a moment later.
  await new Promise((r) => setTimeout(r, 300));
  if (failed || child.exitCode !== null) {
    throw new Error(`BENCH_DRAIN_PERF: perf record did not start (${failed ? (failed as Error).message : `exit ${child.exitCode}`})`);
  }
  return {
    stop: async () => {
      child.kill('SIGINT');
      await exited;
    },
  };
}

/** ANALYZE every table of the run's database, on a connection of its own. */
async function analyzeDatabase(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('ANALYZE');
  } finally {
    await client.end();
  }
}

serve(async (run) => {
  const v = variantById(run.variantId as string);
  const trace = run.trace === true ? startPgTrace() : null;
  const w = await workerFor(v, run.url as string);
  await w.setup();

  if (run.role === 'throughput') {
    const n = run.jobs as number;
    const capMs = run.capMs as number;
    const seqs = Array.from({ length: n }, (_, i) => i);
    const e0 = nowMs();
    await w.enqueueBulk(seqs);
    const enqueueMs = nowMs() - e0;
    // As autovacuum leaves a production table: some plans differ only once there are statistics.
    if (run.analyze === true) await analyzeDatabase(run.url as string);
    const executed: number[] = [];
    // Garbage-collection pauses of this process over the drain: how much of its CPU went there.
    let gcMs = 0;
    const gc = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) gcMs += e.duration;
    });
    // CPU of this process (the system under test and the harness's in-process checks) and of
    // the host's postgres processes over the same window; /proc is read outside the timing.
    // BENCH_DRAIN_PROF=dir: a V8 CPU profile of the drain alone (not the enqueue or the checks).
    const prof = process.env.BENCH_DRAIN_PROF ? new Session() : null;
    if (prof) {
      prof.connect();
      await prof.post('Profiler.enable');
      await prof.post('Profiler.start');
    }
    const perf = process.env.BENCH_DRAIN_PERF
      ? await startPerf(path.join(process.env.BENCH_DRAIN_PERF, `drain-${v.id}-${process.pid}.data`))
      : null;
    const pg0 = postgresCpuMs();
    const cpu0 = process.cpuUsage();
    const t0 = nowMs();
    gc.observe({ entryTypes: ['gc'] });
    await w.start((seq) => {
      executed.push(seq);
    });
    // Handlers all ran: now wait for the database to record every outcome (the real end).
    const allRan = await until(() => executed.length >= n, capMs, 5);
    let drained = false;
    if (allRan) drained = await until(async () => (await w.countDone(n)) >= n, Math.max(1_000, capMs - (nowMs() - t0)), 5);
    const t1 = nowMs();
    const cpu = process.cpuUsage(cpu0);
    await perf?.stop();
    if (prof) {
      const { profile } = await prof.post('Profiler.stop');
      const file = path.join(process.env.BENCH_DRAIN_PROF!, `drain-${v.id}-${process.pid}.cpuprofile`);
      writeFileSync(file, JSON.stringify(profile));
      prof.disconnect();
    }
    const pg1 = postgresCpuMs();
    // Entries are delivered asynchronously: take the ones already queued, then stop.
    for (const e of gc.takeRecords()) gcMs += e.duration;
    gc.disconnect();
    const workerCpuMs = (cpu.user + cpu.system) / 1000;
    const pgCpuMs = pg0 === null || pg1 === null ? null : pg1 - pg0;
    const doneAtEnd = drained ? n : await w.countDone(n);
    await w.stop();
    // Outcomes written asynchronously after stop (fire-and-forget completes) must land before the check.
    await until(async () => (await w.countDone(n)) >= new Set(executed).size, 5_000, 20);
    let verify = await w.verify(executed, n);
    if (!drained && !verify.ok) verify = await stoppedMidStream(w, executed, n, verify);
    await w.close();
    send({
      type: 'result',
      enqueueMs,
      elapsedMs: t1 - t0,
      workerCpuMs,
      workerGcMs: gcMs,
      pgCpuMs,
      done: doneAtEnd,
      drained,
      executions: executed.length,
      verify,
    });
    return;
  }

  if (run.role === 'latency') {
    const starts = new Map<number, number>();
    let executions = 0;
    await w.start((seq) => {
      const t = nowMs();
      executions++;
      if (!starts.has(seq)) starts.set(seq, t);
    });
    send({ type: 'ready' });
    const c = await next<{ type: string; expected: number; deadlineMs: number }>('collect');
    const all = await until(() => starts.size >= c.expected, c.deadlineMs, 5);
    if (all) await until(async () => (await w.countDone(c.expected)) >= c.expected, 5_000, 10);
    await w.stop();
    await until(async () => (await w.countDone(c.expected)) >= starts.size, 5_000, 20);
    // Read the executions only now: a job can still start and complete after a peer's stop()
    // returned (seen once with pg-boss at 0.5 s polling: done in the database, not recorded).
    const executed: number[] = [];
    for (const s of starts.keys()) executed.push(s);
    for (let i = starts.size; i < executions; i++) executed.push(-1); // duplicates make verify fail
    const verify = await w.verify(executed, c.expected);
    await w.close();
    send({ type: 'result', starts: [...starts.entries()], executions, complete: all, verify, ...(trace ? { trace: trace() } : {}) });
    return;
  }
  if (run.role === 'shared') {
    // One of several worker processes on one database (bench:scale): the parent enqueues,
    // counts and verifies; this process starts at 'go', records each handler start, answers
    // 'count' with how many so far, and reports them at 'stop'.
    const starts: Array<[number, number]> = [];
    send({ type: 'ready' });
    await next('go');
    const cpu0 = process.cpuUsage();
    await w.start((seq) => {
      starts.push([seq, nowMs()]);
    });
    // The parent asks how many handlers started (cheaper than counting rows while it drains).
    let stopped = false;
    void (async () => {
      while (!stopped) {
        await next('count');
        send({ type: 'count', n: starts.length });
      }
    })();
    await next('stop');
    stopped = true;
    await w.stop();
    const cpu = process.cpuUsage(cpu0);
    await w.close();
    send({ type: 'result', starts, cpuMs: (cpu.user + cpu.system) / 1000 });
    return;
  }
  throw new Error(`unknown role ${String(run.role)}`);
});
