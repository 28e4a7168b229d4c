// Throughput: N no-op jobs enqueued up front, then drained by one worker process (twice: a
// small backlog, where every system's runs are stable, and a large one);
// jobs/s = N / (time from worker start until the database shows all N done).

import { Child } from '../proc.ts';
import type { Variant } from '../systems/types.ts';
import { type Ctx, type Figure, withDatabase } from './context.ts';
import { type Measurement, summarize } from './summarize.ts';

interface ThroughputResult {
  type: 'result';
  enqueueMs: number;
  elapsedMs: number;
  /** CPU time of the worker process over the drain. */
  workerCpuMs: number;
  /** Garbage-collection pauses of the worker process over the drain (main thread, wall time). */
  workerGcMs: number;
  /** CPU time of every postgres process on this host over the drain; null without /proc. */
  pgCpuMs: number | null;
  done: number;
  drained: boolean;
  executions: number;
  verify: { ok: boolean; done: number; remaining: number; detail: string };
}

/**
 * `scenario`: 'throughput' drains --jobs, 'throughput-small' --small-jobs. `analyze`: ANALYZE the
 * database after the enqueue, before the drain (bench:ab's analyzed drain).
 */
export function throughput(
  ctx: Ctx,
  v: Variant,
  scenario: 'throughput' | 'throughput-small' = 'throughput',
  opts: { analyze?: boolean } = {},
): Measurement {
  const n = scenario === 'throughput' ? ctx.args.jobs : ctx.args.smallJobs;
  const capMs = ctx.args.capMs;
  const run: Measurement['run'] = (i, warm) =>
    withDatabase(ctx, `tp_${v.id}`, async (url) => {
      ctx.progress.update(`throughput ${v.label}: run ${i + 1}${warm ? ' (warm-up)' : ''}, ${n} jobs`);
      const child = new Child('./child/worker.ts', ctx.childEnv);
      try {
        await child.waitFor('booted', 30_000);
        child.send({ type: 'run', role: 'throughput', variantId: v.id, url, jobs: n, capMs, analyze: opts.analyze === true });
        const r = await child.waitFor<ThroughputResult>('result', capMs + 180_000);
        const capped = !r.drained;
        const ok = r.verify.ok;
        return {
          ok,
          detail: ok ? (capped ? `capped: ${r.done} of ${n} done within ${capMs} ms` : 'ok') : `verification failed: ${r.verify.detail}`,
          values: {
            jobsPerSec: (r.done / r.elapsedMs) * 1000,
            elapsedMs: r.elapsedMs,
            done: r.done,
            drained: r.drained ? 1 : 0,
            enqueuePerSec: (n / r.enqueueMs) * 1000,
            ...(r.done > 0 && { workerCpuUsPerJob: (r.workerCpuMs * 1000) / r.done }),
            ...(r.done > 0 && { workerGcUsPerJob: (r.workerGcMs * 1000) / r.done }),
            ...(r.done > 0 && r.pgCpuMs !== null && { pgCpuUsPerJob: (r.pgCpuMs * 1000) / r.done }),
          },
        };
      } finally {
        await child.end();
      }
    });
  const figure = (runs: Figure['runs']): Figure => {
    const anyCapped = runs.some((r) => !r.warmup && r.values.drained === 0);
    return summarize({
      scenario,
      variantId: v.id,
      label: v.label,
      params: { jobs: n, capMs },
      runs,
      ...(anyCapped ? { note: `did not drain ${n} jobs within ${capMs} ms; rate measured over the jobs done by then` } : {}),
    });
  };
  return { run, figure };
}
