// A worker process for the cancel tests: the real engine on queue CANCEL_QUEUE, reporting
// what its handlers do as JSON lines on stdout, with a clock every process on the machine
// shares: {ev:'start'|'aborted'|'end', job, t, ...}. Handlers:
//   honour:   waits for its signal, then throws its reason (stops on the cancel);
//   ignore:   waits for its signal, then returns { finished: true } anyway;
//   stubborn: never looks at its signal and never returns (the process is killed under it).
// Configured by environment: CANCEL_DB_URL, CANCEL_QUEUE, CANCEL_DISPATCH (notify|poll), CANCEL_LEASE_MS.

import { createBaton, type JobContext } from '../../src/index.ts';

const now = () => performance.timeOrigin + performance.now();
const say = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ ...line, t: now() })}\n`);

/** Resolves when `signal` aborts, reporting when and why. */
function aborted(ctx: JobContext): Promise<void> {
  return new Promise((resolve) => {
    const report = () => {
      const reason = ctx.signal.reason as Error | undefined;
      say({ ev: 'aborted', job: ctx.job.id, reason: reason?.name ?? String(reason) });
      resolve();
    };
    if (ctx.signal.aborted) report();
    else ctx.signal.addEventListener('abort', report, { once: true });
  });
}

const baton = createBaton({
  connectionString: process.env.CANCEL_DB_URL!,
  queues: { [process.env.CANCEL_QUEUE!]: 4 },
  dispatch: process.env.CANCEL_DISPATCH === 'poll' ? 'poll' : 'notify',
  poolSize: 3,
  leaseMs: Number(process.env.CANCEL_LEASE_MS ?? 3_000),
  pollIntervalMs: 100,
  fastReclaimGraceMs: 200,
  handlers: {
    honour: async (ctx: JobContext) => {
      say({ ev: 'start', job: ctx.job.id, attempt: ctx.job.attempt });
      await aborted(ctx);
      say({ ev: 'end', job: ctx.job.id, outcome: 'threw' });
      throw ctx.signal.reason;
    },
    ignore: async (ctx: JobContext) => {
      say({ ev: 'start', job: ctx.job.id, attempt: ctx.job.attempt });
      await aborted(ctx);
      say({ ev: 'end', job: ctx.job.id, outcome: 'returned' });
      return { finished: true };
    },
    stubborn: (ctx: JobContext) => {
      say({ ev: 'start', job: ctx.job.id, attempt: ctx.job.attempt });
      return new Promise(() => undefined);
    },
  },
});

await baton.start();
say({ ev: 'ready', pid: process.pid });
process.on('SIGTERM', () => void baton.stop({ drainMs: 0 }).then(() => process.exit(0)));
