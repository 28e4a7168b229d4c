// Processes of the kill -9 scenario. 'victim': claims K jobs whose first attempt sleeps
// ~2 s, and is SIGKILLed mid-flight by the parent. 'rescuer': an idle worker on the same
// queue that must re-run them; it reports each re-start and each recorded success.

import { createBaton } from '../../src/index.ts';
import { nowMs } from '../stats.ts';
import { batonOptions } from '../systems/baton.ts';
import { JOB_TYPE, QUEUE } from '../systems/types.ts';
import { variantById } from '../systems/variants.ts';
import { next, send, serve } from './ipc.ts';

serve(async (run) => {
  const v = variantById(run.variantId as string);
  const k = run.jobs as number;
  const sleepMs = run.sleepMs as number;
  const extra = { leaseMs: run.leaseMs as number, fastReclaim: run.fastReclaim as boolean, queues: { [QUEUE]: k } };

  if (run.role === 'victim') {
    const baton = createBaton({
      ...batonOptions(run.url as string, v, extra),
      handlers: {
        [JOB_TYPE]: async (ctx) => {
          send({ type: 'started', seq: (ctx.payload as { seq: number }).seq, attempt: ctx.job.attempt, t: nowMs() });
          if (ctx.job.attempt === 1) await new Promise((r) => setTimeout(r, sleepMs));
        },
      },
    });
    await baton.migrate();
    await baton.start();
    await baton.enqueueMany(Array.from({ length: k }, (_, seq) => ({ jobType: JOB_TYPE, queue: QUEUE, payload: { seq } })));
    send({ type: 'enqueued' });
    await new Promise(() => undefined); // runs until killed
  }

  if (run.role === 'rescuer') {
    const starts: Array<[number, number, number]> = [];
    const successes: Array<[number, number]> = [];
    const baton = createBaton({
      ...batonOptions(run.url as string, v, extra),
      handlers: {
        [JOB_TYPE]: (ctx) => {
          starts.push([(ctx.payload as { seq: number }).seq, ctx.job.attempt, nowMs()]);
        },
      },
    });
    baton.events.on('succeeded', ({ job }) => {
      successes.push([(job.payload as { seq: number }).seq, nowMs()]);
      if (successes.length === k) send({ type: 'all-succeeded' });
    });
    await next('start');
    await baton.start();
    send({ type: 'ready' });
    await next('report');
    await baton.stop({ drainMs: 2_000 });
    send({ type: 'result', starts, successes });
  }
});
