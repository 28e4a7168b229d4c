// The outbox as a feature of the engine: baton.outbox, the relay (in a process with publishers,
// woken by its own LISTEN connection in notify mode) and outbox retention, run by the leader
// alone with each delete fenced by the lease's epoch.

import type { EngineContext, FeatureParts } from '../engine-context.ts';
import { noTracing } from '../tracing.ts';
import { Relay } from './relay.ts';
import { OutboxRetention } from './retention.ts';
import { OutboxService, outboxChannelFor } from './service.ts';

export function outboxFeature(ctx: EngineContext): { outbox: OutboxService; parts: FeatureParts } {
  const { outbox: deps } = ctx.deps;
  const relay = createRelay(ctx);
  const outbox = new OutboxService({
    store: deps.store,
    adminStore: deps.adminStore,
    schema: ctx.config.schema,
    maxAttemptsDefault: deps.config.maxAttemptsDefault,
    relay,
    captureTrace: () => (ctx.deps.tracing ?? noTracing).capture(),
  });
  const retention = new OutboxRetention({
    store: deps.store,
    config: deps.config,
    leaderEpoch: () => ctx.leaderEpoch(),
    onPurged: (state, count) => outbox.events.emit('purged', { state, count }),
    onError: ctx.onError('outbox-retention'),
  });
  // The relay runs from before the first job to after the last: messages that draining
  // handlers record are still published by this process.
  return { outbox, parts: { services: relay ? [relay] : [], leaderServices: [retention] } };
}

/** A relay for the configured publishers, or null when this process runs none. */
function createRelay(ctx: EngineContext): Relay | null {
  const { outbox } = ctx.deps;
  if (!outbox.relay || Object.keys(outbox.publishers).length === 0) return null;
  const channel = outboxChannelFor(ctx.config.schema);
  const relay: Relay = new Relay({
    store: outbox.store,
    publishers: outbox.publishers,
    config: outbox.config,
    logger: ctx.log,
    listen:
      ctx.config.dispatch === 'notify'
        ? (onNotify) => {
            const l = ctx.deps.createListener({
              onNotify,
              // Notifications sent while it was away are gone: claim at once.
              onConnected: onNotify,
              onError: (err) => ctx.events.emit('error', { where: 'outbox-listener', error: err }),
            });
            return { start: () => l.start([channel]), stop: () => l.stop() };
          }
        : null,
  });
  relay.events.on('error', (e) => ctx.events.emit('error', e));
  return relay;
}
