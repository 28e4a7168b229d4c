// A flow-control test worker: one child process running the real engine on queue `flow`. It
// appends 'start' before each handler run and 'end' after it to its own JSONL execution log
// (synchronously, so a kill -9 loses nothing written), with a clock shared by every process
// on the machine. Configured by environment: FLOW_DB_URL, FLOW_LOG, FLOW_WORKER, FLOW_CONCURRENCY.

import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createBaton, type JobContext } from '../../src/index.ts';

const log = process.env.FLOW_LOG!;
const worker = process.env.FLOW_WORKER!;
const now = () => performance.timeOrigin + performance.now();
const write = (ev: 'start' | 'end', ctx: JobContext) =>
  appendFileSync(log, `${JSON.stringify({ ev, job: ctx.job.id, attempt: ctx.job.attempt, worker, t: now() })}\n`);

const baton = createBaton({
  connectionString: process.env.FLOW_DB_URL!,
  queues: { flow: Number(process.env.FLOW_CONCURRENCY ?? 4) },
  poolSize: 4,
  leaseMs: 2_000,
  fastReclaimGraceMs: 200,
  handlers: {
    work: async (ctx: JobContext<{ ms: number }>) => {
      write('start', ctx);
      await sleep(ctx.payload.ms);
      write('end', ctx);
    },
  },
});

await baton.start();
process.stdout.write('ready\n');
process.on('SIGTERM', () => void baton.stop({ drainMs: 2_000 }).then(() => process.exit(0)));
