// What the /api/flow routes take and answer: limits of queues and key patterns, tenant
// weights, and the flow snapshot. Request schemas reuse the library's (core/flow-admin.ts), so
// the edge and the library refuse the same things.

import { z } from 'zod';
import { nameSchema } from '../../core/config.ts';
import { flowLimitsSchema, keyPatternSchema, rateLimitSchema, tenantWeightSchema } from '../../core/flow-control-admin.ts';

export const flowLimitsBodySchema = flowLimitsSchema.meta({
  description: 'both fields required; null lifts that limit. A rate limit allows `limit` starts per `periodMs` (a burst of up to `limit`)',
});
export const keyLimitsBodySchema = flowLimitsSchema
  .extend({ pattern: keyPatternSchema.meta({ description: "a concurrency key, or a prefix ending in '*' ('vendor:*')" }) })
  .strict();
export const keyPatternQuerySchema = z.strictObject({ pattern: keyPatternSchema });
export const flowQueueParamSchema = z.strictObject({ queue: nameSchema });
export const tenantParamSchema = z.strictObject({ tenantId: nameSchema });
export const tenantWeightBodySchema = z.strictObject({
  weight: tenantWeightSchema.nullable().meta({ description: "the tenant's slice per round-robin round, 1..1000; null resets it to 1" }),
});

const count = z.int().min(0);
const limits = { concurrencyLimit: z.int().nullable(), rateLimit: rateLimitSchema.nullable() };

export const flowResponseSchemas = {
  queueLimits: z.strictObject({ queue: z.string(), ...limits }),
  keyLimits: z.strictObject({ pattern: z.string(), ...limits }),
  keyRemoved: z.strictObject({ pattern: z.string(), removed: z.literal(true) }),
  weight: z.strictObject({ tenantId: z.string(), weight: z.int() }),
  snapshot: z
    .strictObject({
      queues: z.array(
        z.strictObject({
          queue: z.string(),
          ...limits,
          keyed: z.boolean(),
          running: count,
          due: count,
          tokens: z.number().nullable(),
        }),
      ),
      keyPatterns: z.array(z.strictObject({ pattern: z.string(), ...limits })),
      weights: z.array(z.strictObject({ tenantId: z.string(), weight: z.int() })),
      tenants: z.array(z.strictObject({ queue: z.string(), tenantId: z.string(), pending: count, running: count })),
      keys: z.array(
        z.strictObject({
          key: z.string(),
          pending: count,
          due: count,
          running: count,
          concurrencyLimit: z.int().nullable(),
          rateLimit: z.int().nullable(),
          tokens: z.number().nullable(),
        }),
      ),
      held: z.array(z.strictObject({ queue: z.string(), reason: z.enum(['cap', 'rate']), jobs: count })),
    })
    .meta({ description: 'flow control now: limits, buckets, per-tenant and per-key counts, due jobs held back' }),
};
