// The engine's features in one list (cron, retention, outbox, workflows). A new capability adds
// its module and a line here, not in the engine: its services, leader services and NOTIFY
// routes reach the engine's lifecycle through its FeatureParts. Only a capability with an API
// of its own on Baton also adds that field to the Baton interface and the engine.

import { cronFeature } from './cron/feature.ts';
import type { EngineContext, FeatureParts } from './engine-context.ts';
import { outboxFeature } from './outbox/feature.ts';
import { retentionFeature } from './retention-feature.ts';
import { workflowsFeature } from './workflow/feature.ts';

/** Builds every feature on `ctx`, in the order their services start (stop runs it backwards). */
export function composeFeatures(ctx: EngineContext) {
  // Workflows first: their registry is written before the declared schedules, which may target them.
  const workflows = workflowsFeature(ctx);
  const cron = cronFeature(ctx, workflows.workflows);
  const retention = retentionFeature(ctx);
  const outbox = outboxFeature(ctx);
  const parts: FeatureParts[] = [workflows.parts, cron.parts, retention.parts, outbox.parts];
  return { parts, cron: cron.cron, outbox: outbox.outbox, workflows: workflows.workflows };
}
