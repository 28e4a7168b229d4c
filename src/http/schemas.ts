// Zod contracts of the HTTP API (types flow from here to the client via AppType).
// Objects are strict: an unknown body field, or an unknown parameter on a route
// that takes query parameters, is a 400 naming it; a typo never becomes a default.

import { z } from 'zod';
import { DLQ_REPLAY_LIMIT_DEFAULT, LIST_LIMIT_DEFAULT } from '../core/admin.ts';
import { nameSchema as engineNameSchema } from '../core/config.ts';
import { PREVIEW_COUNT_MAX, SCHEDULE_LIST_MAX } from '../core/cron/api.ts';
import { jobIdSchema, runAtSchema } from '../core/job-spec.ts';
import { BULK_IDS_MAX, STATS_WINDOW_SECONDS_DEFAULT, STATS_WINDOW_SECONDS_MAX } from '../core/queue-admin.ts';
import {
  BULK_ACTIONS,
  CONCURRENCY_KEY_MAX_CHARS,
  CONCURRENCY_LIMIT_MAX,
  DELAY_MS_MAX,
  DEPENDS_ON_MAX,
  DLQ_REPLAY_LIMIT_MAX,
  IDEMPOTENCY_KEY_MAX_CHARS,
  JOB_SORT_KEYS,
  JOB_SORT_WINDOW,
  JOB_STATES,
  type JobSpec,
  LIST_LIMIT_MAX,
  LIST_OFFSET_MAX,
  type ListJobsFilter,
  MAX_ATTEMPTS_MAX,
  MISFIRE_POLICIES,
  ON_PARENT_FAILURE,
  PRIORITY_MAX,
  RUN_AT_MAX,
  RUN_AT_MIN,
  SORT_ORDERS,
} from '../index.ts';
import { CATCH_UP_LIMIT_DEFAULT, CATCH_UP_LIMIT_MAX } from '../types/schedule.ts';

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
function instantParam(description: string) {
  return z.iso
    .datetime({ offset: true })
    .transform((s) => new Date(s))
    .pipe(z.date().refine((d) => Number.isFinite(d.getTime()), 'must be a valid instant'))
    .meta({ description: `${description}: ISO 8601 with Z or an offset` });
}

/** One job as submitted over HTTP. The descriptions are the OpenAPI document's (openapi-routes.ts). */
export const jobSpecSchema = z
  .object({
    jobType: nameSchema,
    payload: z.unknown().optional().meta({ description: 'any JSON, stored as jsonb; absent: JSON null' }),
    queue: nameSchema.optional().meta({ description: 'a name, as jobType; default "default"' }),
    tenantId: nameSchema.optional().meta({ description: 'a name, as jobType; default "default"' }),
    priority: z.int().min(-PRIORITY_MAX).max(PRIORITY_MAX).optional().meta({ description: 'higher runs first; default 0' }),
    runAt: z.iso
      .datetime({ offset: true })
      .transform((s) => new Date(s))
      .pipe(runAtSchema)
      .optional()
      .meta({
        description: `ISO 8601 instant with Z or an offset; once the offset is applied it must lie from ${RUN_AT_MIN} to ${RUN_AT_MAX}. Not with delayMs`,
      }),
    delayMs: z.int().min(0).max(DELAY_MS_MAX).optional().meta({ description: 'run after this many ms (database clock). Not with runAt' }),
    maxAttempts: z
      .int()
      .min(1)
      .max(MAX_ATTEMPTS_MAX)
      .optional()
      .meta({ description: 'attempt budget including the first run; default from the engine config' }),
    idempotencyKey: z
      .string()
      .min(1)
      .max(IDEMPOTENCY_KEY_MAX_CHARS)
      .optional()
      .meta({ description: 'a second job with the same (tenantId, idempotencyKey) answers the first, with 200' }),
    concurrencyKey: z.string().min(1).max(CONCURRENCY_KEY_MAX_CHARS).optional().meta({
      description:
        "flow control: jobs sharing a key share its caps and rate limits across the fleet (e.g. 'vendor:x'); with a tenant API key it lives in the tenant's space, stored as '<tenant>#<key>'",
    }),
    concurrencyLimit: z
      .int()
      .min(1)
      .max(CONCURRENCY_LIMIT_MAX)
      .optional()
      .meta({ description: "this job's own cap on running jobs of its key; needs concurrencyKey and an admin credential" }),
    dependsOn: z
      .array(jobIdSchema)
      .max(DEPENDS_ON_MAX)
      .optional()
      .meta({
        description: `up to ${DEPENDS_ON_MAX} job ids of the same tenant; the job is "waiting" until every one has succeeded (one that already has counts as done). An unknown id is a 400`,
      }),
    onParentFailure: z
      .enum(ON_PARENT_FAILURE)
      .optional()
      .meta({ description: 'when a parent dead-letters or is cancelled: cancel this job (default), or run it anyway' }),
  })
  .strict()
  .refine((s) => s.runAt === undefined || s.delayMs === undefined, {
    path: ['delayMs'],
    message: 'runAt and delayMs are mutually exclusive',
  })
  .refine((s) => s.concurrencyLimit === undefined || s.concurrencyKey !== undefined, {
    path: ['concurrencyLimit'],
    message: 'concurrencyLimit needs a concurrencyKey',
  })
  .refine((s) => s.onParentFailure === undefined || (s.dependsOn?.length ?? 0) > 0, {
    path: ['onParentFailure'],
    message: 'onParentFailure needs dependsOn',
  }) satisfies z.ZodType<JobSpec>;

export const batchSchema = z
  .object({
    jobs: z.array(jobSpecSchema).min(1).max(BATCH_MAX),
  })
  .strict();

/**
 * Trace headers an enqueue reads (documentation only: the route parses them leniently, since
 * W3C says an invalid traceparent is ignored, not refused).
 */
export const traceHeadersSchema = z.object({
  traceparent: z.string().optional().meta({
    description: "W3C trace context of the caller's span; stored with the jobs, each attempt's span continues it. Ignored when invalid.",
  }),
  tracestate: z.string().optional().meta({ description: 'W3C tracestate, stored with the traceparent (at most 512 characters kept).' }),
});

export const listJobsQuerySchema = z
  .object({
    state: z.enum(JOB_STATES).optional(),
    tenantId: nameSchema.optional(),
    queue: nameSchema.optional(),
    jobType: nameSchema.optional(),
    createdAfter: instantParam('jobs created at or after this instant').optional(),
    createdBefore: instantParam('jobs created before this instant').optional(),
    due: z
      .enum(['true', 'false'])
      .transform((v) => v === 'true')
      .optional()
      .meta({
        description: `true: jobs whose runAt has come; false: jobs whose runAt lies ahead (with state=pending: the scheduled ones). By the database's clock; but for state=pending, among the newest ${JOB_SORT_WINDOW} jobs matching the other filters (the page says windowed)`,
      }),
    sort: z
      .enum(JOB_SORT_KEYS)
      .optional()
      .meta({
        description: `sort key; default id. Ties are broken by id. createdAt is the id order (ids grow with creation); any other key sorts the newest ${JOB_SORT_WINDOW} matching jobs (the page says windowed)`,
      }),
    order: z.enum(SORT_ORDERS).optional().meta({ description: 'default desc' }),
    limit: intParam(1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT).optional(),
    offset: intParam(0, LIST_OFFSET_MAX).optional(),
  })
  .strict() satisfies z.ZodType<ListJobsFilter>;

/** Body of POST /api/jobs/bulk. */
export const bulkSchema = z
  .object({
    action: z.enum(BULK_ACTIONS).meta({ description: 'what to do to each job: replay, cancel or runNow' }),
    ids: z
      .array(z.string().max(40))
      .min(1)
      .max(BULK_IDS_MAX)
      .refine((ids) => new Set(ids).size === ids.length, 'must not repeat an id')
      .meta({ description: `1 to ${BULK_IDS_MAX} distinct job ids; each is done or refused on its own` }),
  })
  .strict();

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

/** Path parameter of /api/jobs/:id/…: any string; one that cannot name a job (isJobId) is simply 404 JOB_NOT_FOUND. */
export const jobIdParamSchema = z.object({
  id: z.string().meta({ description: 'the job id, a decimal integer; one that names no job answers 404 JOB_NOT_FOUND' }),
});

/** Path parameter of /api/queues/:queue/depth; a name with "/" goes percent-encoded. */
export const queueParamSchema = z.object({
  queue: nameSchema.meta({ description: 'a queue name (percent-encode "/"); an unknown queue has all-zero counts' }),
});

export const dlqReplayQuerySchema = z
  .object({
    limit: intParam(1, DLQ_REPLAY_LIMIT_MAX, DLQ_REPLAY_LIMIT_DEFAULT).optional(),
    queue: nameSchema.optional(),
    tenantId: nameSchema.optional(),
  })
  .strict();

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
