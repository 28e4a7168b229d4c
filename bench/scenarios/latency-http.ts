// Start latency through the daemon: `baton serve` is the idle worker (bench handlers
// loaded via BATON_HANDLERS); a producer process POSTs /api/jobs at a fixed rate over one
// undici keep-alive pool. Latency = handler start in the daemon - HTTP 201 received.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startDaemon } from '../daemon.ts';
import { Child } from '../proc.ts';
import { percentile } from '../stats.ts';
import { verifyBatonJobs } from '../systems/baton.ts';
import { QUEUE, type Variant } from '../systems/types.ts';
import { type Ctx, type Figure, withDatabase } from './context.ts';
import { latencyValues } from './latency.ts';
import { repeat, summarize } from './summarize.ts';

const GRACE_MS = 5_000;

export async function latencyHttp(ctx: Ctx, v: Variant, opts: { rate: number; jobs: number }): Promise<Figure> {
  const pooled: number[] = [];
  const runs = await repeat(ctx.args.runs, !ctx.args.quick, (i, warm) =>
    withDatabase(ctx, `http_${v.id}`, async (url) => {
      ctx.progress.update(`latency-http ${v.label}: run ${i + 1}${warm ? ' (warm-up)' : ''}, ${opts.jobs} jobs at ${opts.rate}/s`);
      const dir = await mkdtemp(path.join(os.tmpdir(), 'baton-bench-http-'));
      const startsFile = path.join(dir, 'starts.json');
      const daemon = await startDaemon(v, url, startsFile);
      const producer = new Child('./child/producer.ts');
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      // DROP DATABASE ... WITH (FORCE) may reach a client still closing: never crash on it.
      pool.on('error', () => undefined);
      try {
        await producer.waitFor('booted', 30_000);
        producer.send({ type: 'run', variantId: v.id, url, via: 'http', httpBase: daemon.base, rate: opts.rate, jobs: opts.jobs });
        await producer.waitFor('ready', 30_000);
        producer.send({ type: 'go' });
        const p = await producer.waitFor<{
          commits: Array<[number, number]>;
          callMs: number[];
          errors: string[];
          errorCount: number;
          lateMs: number;
        }>('result', (opts.jobs / opts.rate) * 1000 + 60_000);
        const end = Date.now() + GRACE_MS;
        const doneCount = async () =>
          Number(
            (await pool.query<{ n: string }>("select count(*) as n from baton.jobs where queue = $1 and state = 'succeeded'", [QUEUE]))
              .rows[0]!.n,
          );
        while ((await doneCount()) < p.commits.length && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
        producer.send({ type: 'close' });
        await producer.waitFor('closed', 30_000);
        const code = await daemon.stop();
        const startsRaw: Array<[number, number]> = JSON.parse(await readFile(startsFile, 'utf8').catch(() => '[]'));
        const starts = new Map<number, number>();
        for (const [seq, t] of startsRaw) if (!starts.has(seq)) starts.set(seq, t);
        const verify = await verifyBatonJobs(
          pool,
          startsRaw.map(([s]) => s),
          p.commits.length,
        );
        const lat = p.commits.map(([seq, t]) => {
          const s = starts.get(seq);
          return s === undefined ? Number.POSITIVE_INFINITY : s - t;
        });
        if (!warm) pooled.push(...lat);
        const problems: string[] = [];
        if (p.errorCount) problems.push(`${p.errorCount} enqueue error(s): ${p.errors.join(' | ')}`);
        if (!verify.ok) problems.push(`verification failed: ${verify.detail}`);
        if (code !== 0) problems.push(`baton serve exited with code ${code}`);
        return {
          ok: problems.length === 0,
          detail: problems.join('; ') || 'ok',
          values: latencyValues(lat, p),
        };
      } finally {
        await producer.end();
        await daemon.stop();
        await pool.end();
        await rm(dir, { recursive: true, force: true });
      }
    }),
  );
  const sorted = pooled.sort((a, b) => a - b);
  return summarize({
    scenario: 'latency-http',
    variantId: v.id,
    label: v.label,
    params: { rate: opts.rate, jobs: opts.jobs, via: 'http', graceMs: GRACE_MS },
    runs,
    quantiles: Array.from({ length: 101 }, (_, k) => percentile(sorted, k)).map((q) => (Number.isFinite(q) ? q : null)),
  });
}
