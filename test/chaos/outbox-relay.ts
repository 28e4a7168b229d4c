// A relay process of the outbox chaos scenario: an engine with no queues whose outbox relay
// publishes to the scenario's webhook receiver and, through a fault proxy, to NATS JetStream.
// Says 'ready' over IPC once started; stops on SIGTERM; the scenario kill -9s it at will.

import { createBaton, natsPublisher, webhookPublisher } from '../../src/index.ts';

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
};

const baton = createBaton({
  connectionString: env('CHAOS_DB_URL'),
  poolSize: 3,
  outbox: {
    publishers: {
      hooks: webhookPublisher({ url: env('CHAOS_HOOK_URL'), secret: env('CHAOS_HOOK_SECRET'), timeoutMs: 1_000 }),
      js: natsPublisher({ servers: env('CHAOS_NATS_URL'), ackTimeoutMs: 1_000 }),
    },
    batchSize: 20,
    publishTimeoutMs: 1_500,
    visibilityMs: 3_000,
    backoffBaseMs: 50,
    backoffCapMs: 500,
    pollIntervalMs: 200,
    maxAttemptsDefault: 1_000,
  },
});
await baton.start();
process.send?.({ type: 'ready' });
process.on('SIGTERM', () => {
  void baton.stop({ drainMs: 2_000 }).then(() => process.exit(0));
});
