// Zod contracts of the HTTP API (types flow from here to the client via AppType).
// Objects are strict: an unknown body field, or an unknown parameter on a route
// that takes query parameters, is a 400 naming it; a typo never becomes a default.

import { z } from 'zod';
import {
  DELAY_MS_MAX,
  DLQ_REPLAY_LIMIT_MAX,
  IDEMPOTENCY_KEY_MAX_CHARS,
  JOB_STATES,
  LIST_LIMIT_MAX,
  LIST_OFFSET_MAX,
  MAX_ATTEMPTS_MAX,
  PRIORITY_MAX,
  nameSchema as engineNameSchema,
  runAtSchema,
  type JobSpec,
  type ListJobsFilter,
} from '../index.ts';

/**
 * Most jobs accepted by one POST /api/jobs/batch: below the engine's ENQUEUE_BATCH_MAX, as one
 * request body (1 MiB by default) is what bounds a batch over HTTP.
 */
export const BATCH_MAX = 1_000;

/**
 * Queue, job type and tenant names: the engine's rule (NAME_PATTERN: 1-128 of [A-Za-z0-9_.:-/],
 * no empty segment), and at the edge also no "." or ".." segment: names show up in URLs
 * (/api/queues/:queue/depth), where such segments are rewritten by clients and proxies.
 */
export const nameSchema = engineNameSchema.refine(
  (s) => !s.split('/').some((seg) => seg === '.' || seg === '..'),
  'must not contain "." or ".." path segments',
);

/** A non-negative decimal integer in a query string, bounded; "1e9", "-1", "1.5", "" are refused. */
function intParam(min: number, max: number) {
  return z
    .string()
    .regex(/^\d{1,9}$/, `must be an integer from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
}

/** One job as submitted over HTTP. runAt is an ISO 8601 instant with an offset (Z or ±hh:mm). */
export const jobSpecSchema = z
  .object({
    jobType: nameSchema,
    /** Any JSON; stored as jsonb. Absent: stored as JSON null. */
    payload: z.unknown().optional(),
    queue: nameSchema.optional(),
    tenantId: nameSchema.optional(),
    /** Higher runs first; -1 000 000 .. 1 000 000. */
    priority: z.int().min(-PRIORITY_MAX).max(PRIORITY_MAX).optional(),
    /** The engine's own bounds (years 0001..9999 in UTC), checked after the offset is applied. */
    runAt: z.iso
      .datetime({ offset: true })
      .transform((s) => new Date(s))
      .pipe(runAtSchema)
      .optional(),
    delayMs: z.int().min(0).max(DELAY_MS_MAX).optional(),
    maxAttempts: z.int().min(1).max(MAX_ATTEMPTS_MAX).optional(),
    idempotencyKey: z.string().min(1).max(IDEMPOTENCY_KEY_MAX_CHARS).optional(),
  })
  .strict()
  .refine((s) => s.runAt === undefined || s.delayMs === undefined, {
    path: ['delayMs'],
    message: 'runAt and delayMs are mutually exclusive',
  }) satisfies z.ZodType<JobSpec>;

export const batchSchema = z
  .object({
    jobs: z.array(jobSpecSchema).min(1).max(BATCH_MAX),
  })
  .strict();

export const listJobsQuerySchema = z
  .object({
    state: z.enum(JOB_STATES).optional(),
    tenantId: nameSchema.optional(),
    queue: nameSchema.optional(),
    jobType: nameSchema.optional(),
    limit: intParam(1, LIST_LIMIT_MAX).optional(),
    offset: intParam(0, LIST_OFFSET_MAX).optional(),
  })
  .strict() satisfies z.ZodType<ListJobsFilter>;

export const dlqReplayQuerySchema = z
  .object({
    limit: intParam(1, DLQ_REPLAY_LIMIT_MAX).optional(),
    queue: nameSchema.optional(),
    tenantId: nameSchema.optional(),
  })
  .strict();
