// Durable workflows as a feature of the engine: each defined workflow is a job type of the
// engine's runner, recorded in the registry of defined workflows at start(), and a run's
// driving job that dead-letters fails its run. Its executions run as jobs on the worker's
// claim loops; its one service, on the leader, folds the finished runs'
// count deltas into their counts (migration 0029), so a scrape reads few of them.

import type { EngineContext, FeatureParts } from '../engine-context.ts';
import { channelFor } from '../notifier.ts';
import { Periodic } from '../periodic.ts';
import { service } from '../service.ts';
import { noTracing } from '../tracing.ts';
import { Workflows } from './service.ts';

/** How often the leader folds the run count deltas: a scrape reads those written since (and dead ones until vacuum). */
export const RUN_COUNT_FOLD_MS = 5_000;

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
    captureTrace: () => (ctx.deps.tracing ?? noTracing).capture(),
    ...(ctx.deps.tracing ? { tracing: ctx.deps.tracing } : {}),
  });
  ctx.events.on('deadLettered', (e) => workflows.jobDeadLettered(e.job));
  const fold = new Periodic('workflow run counts', {
    intervalMs: RUN_COUNT_FOLD_MS,
    task: () => ctx.deps.workflowStore.workflowFoldRunCounts(),
    onError: ctx.onError('workflow run counts'),
  });
  // At start(), before any schedule is reconciled or work claimed: a start by name from any
  // process (and a schedule's workflow target) finds the workflows defined here.
  const register = service('workflow registry', { start: () => workflows.register() });
  return { workflows, parts: { services: [register], leaderServices: [fold] } };
}
