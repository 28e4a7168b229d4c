// Job retention as a feature of the engine: the leader deletes finished jobs past their
// retention and vacuums the jobs table when due (retention.ts; every delete fenced by the epoch).

import type { EngineContext, FeatureParts } from './engine-context.ts';
import { Retention } from './retention.ts';

export function retentionFeature(ctx: EngineContext): { parts: FeatureParts } {
  const retention = new Retention({
    executor: ctx.deps.executor,
    config: ctx.config,
    leaderEpoch: () => ctx.leaderEpoch(),
    onPurged: (state, byQueue) => {
      for (const { queue, n } of byQueue) ctx.events.emit('purged', { state, queue, count: n });
    },
    onError: ctx.onError('retention'),
  });
  // Its first sweep at once: a leader that just took over works off what its predecessor left.
  return { parts: { leaderServices: [retention] } };
}
