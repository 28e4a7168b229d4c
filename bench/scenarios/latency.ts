// Start latency: an idle worker process; a producer in another process enqueues at a
// fixed rate; latency = handler start - enqueue commit (host monotonic clock, same host).

import type { TraceEvent } from '../child/pg-trace.ts';
import { Child } from '../proc.ts';
import { distribution, percentile } from '../stats.ts';
import type { Variant } from '../systems/types.ts';
import { type Ctx, type Figure, withDatabase } from './context.ts';
import { type Measurement, summarize } from './summarize.ts';

interface ProducerResult {
  type: 'result';
  commits: Array<[number, number]>;
  callMs: number[];
  errors: string[];
  errorCount: number;
  lateMs: number;
}
interface WorkerResult {
  type: 'result';
  starts: Array<[number, number]>;
  executions: number;
  complete: boolean;
  verify: { ok: boolean; done: number; remaining: number; detail: string };
  trace?: TraceEvent[];
}

/** How long after the last enqueue a worker may take to start the remaining jobs. */
const GRACE_MS = 5_000;

export interface LatencyRunOptions {
  variantId: string;
  rate: number;
  jobs: number;
  via: 'library' | 'http';
  httpBase?: string | undefined;
  /** Trace the worker's pg client (child/pg-trace.ts) and return the events. */
  trace?: boolean;
  /** Extra environment of both child processes. */
  env?: Record<string, string> | undefined;
}

/** One latency run on database `url`: an idle worker and a producer, each in a fresh child process. */
export async function latencyRun(url: string, o: LatencyRunOptions): Promise<{ p: ProducerResult; w: WorkerResult }> {
  const worker = new Child('./child/worker.ts', o.env);
  const producer = new Child('./child/producer.ts', o.env);
  try {
    await Promise.all([worker.waitFor('booted', 30_000), producer.waitFor('booted', 30_000)]);
    worker.send({ type: 'run', role: 'latency', variantId: o.variantId, url, trace: o.trace === true });
    await worker.waitFor('ready', 60_000);
    producer.send({ type: 'run', variantId: o.variantId, url, via: o.via, httpBase: o.httpBase, rate: o.rate, jobs: o.jobs });
    await producer.waitFor('ready', 30_000);
    producer.send({ type: 'go' });
    const p = await producer.waitFor<ProducerResult>('result', (o.jobs / o.rate) * 1000 + 60_000);
    worker.send({ type: 'collect', expected: p.commits.length, deadlineMs: GRACE_MS });
    const w = await worker.waitFor<WorkerResult>('result', GRACE_MS + 60_000);
    producer.send({ type: 'close' });
    await producer.waitFor('closed', 30_000);
    return { p, w };
  } finally {
    await Promise.all([producer.end(), worker.end()]);
  }
}

export function latency(
  ctx: Ctx,
  v: Variant,
  opts: { rate: number; jobs: number; via: 'library' | 'http'; scenario: string },
): Measurement {
  const pooled: number[] = [];
  const run: Measurement['run'] = (i, warm) =>
    withDatabase(ctx, `lat_${v.id}`, async (url) => {
      ctx.progress.update(`${opts.scenario} ${v.label}: run ${i + 1}${warm ? ' (warm-up)' : ''}, ${opts.jobs} jobs at ${opts.rate}/s`);
      const { p, w } = await latencyRun(url, {
        variantId: v.id,
        rate: opts.rate,
        jobs: opts.jobs,
        via: opts.via,
        httpBase: ctx.httpBase,
        env: ctx.childEnv,
      });
      const starts = new Map(w.starts);
      const lat = p.commits.map(([seq, t]) => {
        const s = starts.get(seq);
        return s === undefined ? Number.POSITIVE_INFINITY : s - t;
      });
      const notStarted = lat.filter((x) => x === Number.POSITIVE_INFINITY).length;
      if (!warm) pooled.push(...lat);
      const problems: string[] = [];
      if (p.errorCount) problems.push(`${p.errorCount} enqueue error(s): ${p.errors.join(' | ')}`);
      if (!w.verify.ok) problems.push(`verification failed: ${w.verify.detail}`);
      const ok = problems.length === 0;
      return {
        ok,
        detail: ok
          ? notStarted
            ? `${notStarted} of ${lat.length} not started within ${GRACE_MS} ms of the last enqueue`
            : 'ok'
          : problems.join('; '),
        values: latencyValues(lat, p),
      };
    });
  const figure = (runs: Figure['runs']): Figure => {
    const sorted = pooled.sort((a, b) => a - b);
    const quantiles = Array.from({ length: 101 }, (_, k) => percentile(sorted, k));
    const counted = runs.filter((r) => !r.warmup);
    const saturated = counted.some((r) => (r.values.notStarted ?? 0) > 0);
    const worst = Math.max(0, ...counted.map((r) => r.values.notStarted ?? 0));
    return summarize({
      scenario: opts.scenario,
      variantId: v.id,
      label: v.label,
      params: { rate: opts.rate, jobs: opts.jobs, via: opts.via, graceMs: GRACE_MS },
      runs,
      quantiles: quantiles.map((q) => (Number.isFinite(q) ? q : null)),
      ...(saturated
        ? {
            note: `could not keep up: up to ${worst} of ${opts.jobs} jobs per run had not started ${GRACE_MS} ms after the last enqueue (counted as infinite latency)`,
          }
        : {}),
    });
  };
  return { run, figure };
}

/** The figure values of one latency run: percentiles of the samples (Infinity = never started) and producer timing. */
export function latencyValues(lat: number[], p: { callMs: number[]; lateMs: number }): Record<string, number> {
  const d = distribution(lat);
  return {
    p50: d.p50,
    p95: d.p95,
    p99: d.p99,
    max: d.max,
    // Below 0: the worker started the job before the producer had processed its commit acknowledgement.
    min: d.min,
    mean: d.mean,
    jobs: lat.length,
    notStarted: lat.filter((x) => x === Number.POSITIVE_INFINITY).length,
    enqueueCallP50: percentile(
      [...p.callMs].sort((a, b) => a - b),
      50,
    ),
    producerLateMs: p.lateMs,
  };
}
