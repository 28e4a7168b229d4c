// Producer process of a latency run: enqueues at a fixed rate on an absolute schedule
// (open loop: a slow enqueue does not delay the next one) and records each commit time.

import { nowMs } from '../stats.ts';
import { producerFor } from '../systems/index.ts';
import { variantById } from '../systems/variants.ts';
import { next, send, serve } from './ipc.ts';

serve(async (run) => {
  const v = variantById(run.variantId as string);
  const p = await producerFor(v, run.url as string, run.via as 'library' | 'http', run.httpBase as string | undefined);
  await p.open();
  const rate = run.rate as number;
  const jobs = run.jobs as number;
  send({ type: 'ready' });
  await next('go');
  const period = 1000 / rate;
  const t0 = nowMs() + 5;
  const commits: Array<[number, number]> = [];
  const callMs: number[] = [];
  const errors: string[] = [];
  const pending: Array<Promise<void>> = [];
  for (let seq = 0; seq < jobs; seq++) {
    const due = t0 + seq * period;
    const wait = due - nowMs();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const called = nowMs();
    pending.push(
      p.enqueue(seq).then(
        () => {
          const t = nowMs();
          commits.push([seq, t]);
          callMs.push(t - called);
        },
        (err: unknown) => {
          errors.push(err instanceof Error ? err.message : String(err));
        },
      ),
    );
  }
  await Promise.all(pending);
  const lateMs = nowMs() - (t0 + (jobs - 1) * period);
  send({ type: 'result', commits, callMs, errors: errors.slice(0, 5), errorCount: errors.length, lateMs });
  // Stay open until the worker has collected: closing at once could drop the last
  // wake-up still in flight and charge the last job a poll interval.
  await next('close');
  await p.close();
  send({ type: 'closed' });
});
