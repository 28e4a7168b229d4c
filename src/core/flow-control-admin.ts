// Flow control's operator side: reading and setting queue limits, key limits (per pattern) and
// tenant weights, and the snapshot the console and metrics show (per-tenant depth and running,
// caps, buckets, and how many due jobs the limits hold back). Limits live in the database
// (migration 0015), so every worker process obeys a change from its next claim.

import { z } from 'zod';
import type { Executor } from '../driver/executor.ts';
import { BatonError } from '../types/errors.ts';
import type { FlowLimits, FlowSnapshot } from '../types/flow-control.ts';
import { nameSchema } from './config.ts';
import { CONCURRENCY_KEY_MAX_CHARS, CONCURRENCY_LIMIT_MAX } from './job-spec.ts';

export type { FlowKeyState, FlowLimits, FlowQueueState, FlowSnapshot, RateLimit } from '../types/flow-control.ts';

export const RATE_PERIOD_MS_MAX = 24 * 3600 * 1000;
export const TENANT_WEIGHT_MAX = 1_000;
/** Groups (queue x tenant, keys) a snapshot reads at most. */
export const FLOW_SNAPSHOT_GROUPS_MAX = 1_000;

export const rateLimitSchema = z
  .object({
    limit: z.number().int().min(1).max(CONCURRENCY_LIMIT_MAX),
    periodMs: z.number().int().min(1).max(RATE_PERIOD_MS_MAX),
  })
  .strict();
export const flowLimitsSchema = z
  .object({
    concurrencyLimit: z.number().int().min(1).max(CONCURRENCY_LIMIT_MAX).nullable(),
    rateLimit: rateLimitSchema.nullable(),
  })
  .strict();
/** An exact concurrency key, or a prefix followed by '*' ('vendor:*'; '*' alone matches every key). */
export const keyPatternSchema = z
  .string()
  .min(1)
  .max(CONCURRENCY_KEY_MAX_CHARS)
  .refine((s) => !s.includes('\u0000') && !s.slice(0, -1).includes('*'), "must be a key, or a prefix ending in a single '*'");
export const tenantWeightSchema = z.number().int().min(1).max(TENANT_WEIGHT_MAX);

/** Flow control's admin: queue and key-pattern caps and rate limits, tenant weights, the snapshot (docs/flow-control.md). */
export interface FlowAdminApi {
  flow(): Promise<FlowSnapshot>;
  /** Sets (replaces) a queue's limits; both null clears them. */
  setQueueLimits(queue: string, limits: FlowLimits): Promise<FlowLimits & { queue: string }>;
  /** Sets (replaces) the limits of a key pattern; at least one limit. */
  setKeyLimits(pattern: string, limits: FlowLimits): Promise<FlowLimits & { pattern: string }>;
  /** KEY_PATTERN_NOT_FOUND when there is none. */
  deleteKeyLimits(pattern: string): Promise<void>;
  /** A tenant's weight in every queue's round-robin (1..1000); null resets it to 1. */
  setTenantWeight(tenantId: string, weight: number | null): Promise<{ tenantId: string; weight: number }>;
}

function parse<T>(schema: z.ZodType<T>, value: unknown, field: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => `${[field, ...i.path].join('.')}: ${i.message}`);
  throw new BatonError('INVALID_ARGUMENT', `invalid ${field}: ${issues.join('; ')}`, { details: issues });
}

export function flowAdmin(executor: Executor, wake: (queue: string) => void): FlowAdminApi {
  return {
    async flow() {
      const s = await executor.flowSnapshot({ groups: FLOW_SNAPSHOT_GROUPS_MAX });
      const held: FlowSnapshot['held'] = [];
      for (const q of s.queues) {
        if (q.due === 0) continue;
        if (q.concurrencyLimit !== null && q.running >= q.concurrencyLimit) held.push({ queue: q.queue, reason: 'cap', jobs: q.due });
        else if (q.tokens !== null && q.tokens < 1) held.push({ queue: q.queue, reason: 'rate', jobs: q.due });
      }
      return { ...s, held };
    },
    async setQueueLimits(queue, limits) {
      const name = parse(nameSchema, queue, 'queue');
      const l = parse(flowLimitsSchema, limits, 'limits');
      await executor.flowSetQueue({ queue: name, ...l });
      // Lifted or loosened limits: let the queue's workers claim again now.
      wake(name);
      return { queue: name, ...l };
    },
    async setKeyLimits(pattern, limits) {
      const p = parse(keyPatternSchema, pattern, 'pattern');
      const l = parse(flowLimitsSchema, limits, 'limits');
      if (l.concurrencyLimit === null && l.rateLimit === null) {
        throw new BatonError('INVALID_ARGUMENT', 'a key pattern needs a concurrencyLimit or a rateLimit (delete it to lift its limits)', {
          details: { field: 'limits' },
        });
      }
      await executor.flowSetKey({ pattern: p, ...l });
      return { pattern: p, ...l };
    },
    async deleteKeyLimits(pattern) {
      const p = parse(keyPatternSchema, pattern, 'pattern');
      if (!(await executor.flowDeleteKey({ pattern: p }))) {
        throw new BatonError('KEY_PATTERN_NOT_FOUND', `no limits for key pattern ${p}`);
      }
    },
    async setTenantWeight(tenantId, weight) {
      const t = parse(nameSchema, tenantId, 'tenantId');
      const w = parse(tenantWeightSchema.nullable(), weight, 'weight');
      await executor.flowSetWeight({ tenantId: t, weight: w });
      return { tenantId: t, weight: w ?? 1 };
    },
  };
}
