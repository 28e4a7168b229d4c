// Worker process of bench/shard.ts: a sharded Baton working the bench's queues with a no-op
// handler, started on 'go' and stopped on 'stop', reporting its CPU time and jobs run.

import { createShardedBaton } from '../../src/create-sharded-baton.ts';
import { next, send, serve } from './ipc.ts';

serve(async (run) => {
  const baton = createShardedBaton({
    clusters: run.clusters as Record<string, string>,
    routes: run.routes as Record<string, string>,
    queues: run.queues as Record<string, number>,
    handlers: { noop: async () => undefined },
  });
  send({ type: 'ready' });
  await next('go');
  const cpu0 = process.cpuUsage();
  await baton.start();
  send({ type: 'started' });
  await next('stop');
  await baton.stop({ drainMs: 5_000 });
  const cpu = process.cpuUsage(cpu0);
  send({ type: 'result', succeeded: baton.stats().succeeded, cpuMs: (cpu.user + cpu.system) / 1000 });
});
