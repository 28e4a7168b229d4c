// Durable workflows as a feature of the engine: each defined workflow is a job type of the
// engine's runner, and a run's driving job that dead-letters fails its run. No service of its
// own: its executions run as jobs on the worker's claim loops.

import type { EngineContext, FeatureParts } from '../engine-context.ts';
import { channelFor } from '../notifier.ts';
import { Workflows } from './service.ts';

export function workflowsFeature(ctx: EngineContext): { workflows: Workflows; parts: FeatureParts } {
  const workflows = new Workflows({
    store: ctx.deps.workflowStore,
    handlers: ctx.handlers,
    wake: (q) => ctx.wakeQueues([q]),
    enqueue: async (spec) => {
      const [result] = await ctx.enqueueMany([spec]);
      return result as NonNullable<typeof result>;
    },
    channelOf: (q) => channelFor(ctx.config.schema, q),
  });
  ctx.events.on('deadLettered', (e) => workflows.jobDeadLettered(e.job));
  return { workflows, parts: {} };
}
