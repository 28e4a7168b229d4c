// A child process for the cron failover figure: an engine that may lead (and so tick),
// working queue `cron` with a no-op handler. Tells the parent when it is ready and when it
// leads; the parent kills it with SIGKILL.

import { createBaton } from '../../src/index.ts';

const baton = createBaton({
  connectionString: process.env.BENCH_DB_URL as string,
  queues: { cron: 2 },
  handlers: { tick: () => null },
  poolSize: 3,
  deleteOnSuccess: false,
});
baton.events.on('leadership', (e) => process.send?.({ type: 'leadership', leader: e.leader }));
await baton.start();
process.send?.({ type: 'ready', workerId: baton.config.workerId, leader: baton.stats().leader });
process.on('disconnect', () => process.exit(1));
