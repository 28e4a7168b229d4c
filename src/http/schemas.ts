// Zod contracts of the HTTP API (types flow from here to the client via AppType).
// Objects are strict: an unknown body field, or an unknown parameter on a route
// that takes query parameters, is a 400 naming it; a typo never becomes a default.

import { z } from 'zod';
import { nameSchema as engineNameSchema } from '../core/config.ts';
import { PREVIEW_COUNT_MAX, SCHEDULE_LIST_MAX } from '../core/cron/api.ts';
import { STATS_WINDOW_SECONDS_DEFAULT, STATS_WINDOW_SECONDS_MAX } from '../core/queue-admin.ts';
import { LIST_OFFSET_MAX, MAX_ATTEMPTS_MAX, MISFIRE_POLICIES, PRIORITY_MAX } from '../index.ts';
import { CATCH_UP_LIMIT_DEFAULT, CATCH_UP_LIMIT_MAX } from '../types/schedule.ts';

/**
 * Queue, job type and tenant names: the engine's rule (NAME_PATTERN: 1-128 of [A-Za-z0-9_.:-/],
 * no empty segment), and at the edge also no "." or ".." segment: names show up in URLs
 * (/api/queues/:queue/depth), where such segments are rewritten by clients and proxies.
 */
export const nameSchema = engineNameSchema
  .refine((s) => !s.split('/').some((seg) => seg === '.' || seg === '..'), 'must not contain "." or ".." path segments')
  .meta({ description: '1-128 characters of A-Z a-z 0-9 _ . : - /, case-sensitive; no empty, "." or ".." segment' });

/** A non-negative decimal integer in a query string, bounded; "1e9", "-1", "1.5", "" are refused. */
export function intParam(min: number, max: number, dflt?: number) {
  return z
    .string()
    .regex(/^\d{1,9}$/, `must be an integer from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`))
    .meta({ description: `a decimal integer from ${min} to ${max}${dflt === undefined ? '' : `; default ${dflt}`}` });
}

/** An ISO 8601 instant with Z or an offset, in a query string. */
export function instantParam(description: string) {
  return z.iso
    .datetime({ offset: true })
    .transform((s) => new Date(s))
    .pipe(z.date().refine((d) => Number.isFinite(d.getTime()), 'must be a valid instant'))
    .meta({ description: `${description}: ISO 8601 with Z or an offset` });
}

export const statsQuerySchema = z
  .object({
    windowSeconds: intParam(1, STATS_WINDOW_SECONDS_MAX, STATS_WINDOW_SECONDS_DEFAULT).optional(),
  })
  .strict();

/** GET /api/stats/history. */
export const statsHistoryQuerySchema = z
  .object({
    since: instantParam('only samples read after this instant (the `at` of the last one the caller has)').optional(),
  })
  .strict();

/** Path parameter of /api/queues/:queue/depth; a name with "/" goes percent-encoded. */
export const queueParamSchema = z.object({
  queue: nameSchema.meta({ description: 'a queue name (percent-encode "/"); an unknown queue has all-zero counts' }),
});

/** The fields of a schedule that can be set and edited (POST /api/cron, PATCH /api/cron/:id). */
const scheduleFields = {
  cron: z
    .string()
    .min(1)
    .max(200)
    .meta({ description: 'five fields (minute hour day-of-month month day-of-week), six with leading seconds, or a macro such as @daily' }),
  timezone: z.string().min(1).max(64).meta({ description: 'an IANA zone id such as Europe/London; a fixed offset is refused' }),
  jobType: nameSchema,
  queue: nameSchema.optional().meta({ description: 'a name, as jobType; default "default"' }),
  payload: z.unknown().optional().meta({ description: "any JSON, each occurrence's job payload; absent: JSON null" }),
  priority: z.int().min(-PRIORITY_MAX).max(PRIORITY_MAX).optional().meta({ description: 'higher runs first; default 0' }),
  maxAttempts: z
    .int()
    .min(1)
    .max(MAX_ATTEMPTS_MAX)
    .optional()
    .meta({ description: 'attempt budget of each job; default from the engine config' }),
  misfirePolicy: z
    .enum(MISFIRE_POLICIES)
    .optional()
    .meta({ description: 'what happens to occurrences missed while nothing was ticking; default fire_once' }),
  catchUpLimit: z
    .int()
    .min(1)
    .max(CATCH_UP_LIMIT_MAX)
    .optional()
    .meta({ description: `most missed occurrences fire_all enqueues in one catch-up (the latest); default ${CATCH_UP_LIMIT_DEFAULT}` }),
};

/** POST /api/cron: create, or update by (tenantId, name). */
export const scheduleBodySchema = z
  .object({
    name: nameSchema,
    tenantId: nameSchema.optional().meta({ description: 'a name, as jobType; default "default"' }),
    ...scheduleFields,
  })
  .strict();

/** PATCH /api/cron/:id: any subset of the fields, and paused to pause (true) or resume (false). */
export const schedulePatchSchema = z
  .object({
    ...Object.fromEntries(Object.entries(scheduleFields).map(([k, v]) => [k, v.optional()])),
    paused: z.boolean().optional().meta({ description: 'true pauses; false resumes from the next occurrence after now' }),
  })
  .strict() as z.ZodObject<
  {
    [K in keyof typeof scheduleFields]: z.ZodOptional<(typeof scheduleFields)[K]>;
  } & { paused: z.ZodOptional<z.ZodBoolean> }
>;

export const scheduleIdParamSchema = z.object({
  id: z.string().meta({ description: 'the schedule id, a decimal integer; one that names no schedule answers 404 SCHEDULE_NOT_FOUND' }),
});

export const listSchedulesQuerySchema = z
  .object({
    tenantId: nameSchema.optional(),
    limit: intParam(1, SCHEDULE_LIST_MAX, 100).optional(),
    offset: intParam(0, LIST_OFFSET_MAX).optional(),
  })
  .strict();

export const cronPreviewQuerySchema = z
  .object({
    cron: scheduleFields.cron,
    timezone: scheduleFields.timezone,
    count: intParam(1, PREVIEW_COUNT_MAX, 10).optional(),
    from: instantParam('the fire instants after this one; default now').optional(),
  })
  .strict();
