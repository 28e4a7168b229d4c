// Jobs over HTTP: the zod contracts of the requests (a job spec, a batch, a listing, bulk
// actions, the dead-letter replay). Objects are strict: an unknown field or parameter is a 400 naming it.

import { z } from 'zod';
import { DLQ_REPLAY_LIMIT_DEFAULT, LIST_LIMIT_DEFAULT } from '../../core/admin.ts';
import { refineWindow, runAtSchema, THROTTLE_LIMIT_MAX, WINDOW_KEY_MAX_CHARS } from '../../core/job-spec.ts';
import { SHARDED_CURSOR_PATTERN } from '../../core/sharding/merged-listing.ts';
import { ID_PATTERN, isJobRef } from '../../types/job.ts';

/** A job id as a request names it: decimal, or `<cluster>:<id>` on a server over several clusters. */
const jobRefSchema = z.string().refine(isJobRef, 'must be a job id (a positive decimal integer, or <cluster>:<id> on a sharded server)');

import { BULK_IDS_MAX } from '../../core/queue-admin.ts';
import {
  BULK_ACTIONS,
  CONCURRENCY_KEY_MAX_CHARS,
  CONCURRENCY_LIMIT_MAX,
  DEBOUNCE_MODES,
  DEBOUNCE_WINDOW_MS_MAX,
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
  ON_PARENT_FAILURE,
  PRIORITY_MAX,
  RUN_AT_MAX,
  RUN_AT_MIN,
  SORT_ORDERS,
} from '../../index.ts';
import { instantParam, intParam, nameSchema } from '../schemas.ts';

/**
 * Most jobs accepted by one POST /api/jobs/batch: below the engine's ENQUEUE_BATCH_MAX, as one
 * request body (1 MiB by default) is what bounds a batch over HTTP.
 */
export const BATCH_MAX = 1_000;

const windowKey = z.string().min(1).max(WINDOW_KEY_MAX_CHARS).meta({ description: 'the key, per tenant and queue' });
const windowMs = z.int().min(1).max(DEBOUNCE_WINDOW_MS_MAX);

/** A debounce rule over HTTP: of a job (per tenant and queue) or of a workflow start (per tenant and the workflow's queue). */
export const debounceBodySchema = z
  .strictObject({
    key: windowKey,
    windowMs: windowMs.meta({ description: 'the quiet period, in ms' }),
    mode: z.enum(DEBOUNCE_MODES).optional().meta({
      description:
        "trailing (default): while the key's job (or run) is pending and unclaimed, an enqueue (or start) replaces its payload (input) and pushes its runAt to now + windowMs; leading: the first one runs, later ones within windowMs of the last are dropped",
    }),
    maxWaitMs: windowMs
      .optional()
      .meta({ description: 'at least windowMs: how long a burst may hold the job back (trailing) or keep dropping (leading)' }),
  })
  .refine((d) => d.maxWaitMs === undefined || d.maxWaitMs >= d.windowMs, {
    path: ['maxWaitMs'],
    message: 'maxWaitMs must be at least windowMs',
  });

/** A throttle rule over HTTP (as debounceBodySchema). */
export const throttleBodySchema = z.strictObject({
  key: windowKey,
  windowMs: windowMs.meta({ description: 'the window, in ms, from the enqueue (or start) that created its first job (or run)' }),
  limit: z.int().min(1).max(THROTTLE_LIMIT_MAX).optional().meta({ description: 'jobs (or runs) created per window; default 1' }),
});

/** One job as submitted over HTTP. Its descriptions are the OpenAPI document's. */
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
      .array(jobRefSchema)
      .max(DEPENDS_ON_MAX)
      .optional()
      .meta({
        description: `up to ${DEPENDS_ON_MAX} job ids of the same tenant; the job is "waiting" until every one has succeeded (one that already has counts as done). An unknown id is a 400`,
      }),
    onParentFailure: z
      .enum(ON_PARENT_FAILURE)
      .optional()
      .meta({ description: 'when a parent dead-letters or is cancelled: cancel this job (default), or run it anyway' }),
    debounce: debounceBodySchema.optional().meta({
      description:
        'debounce by key, per tenant and queue (docs/debounce.md). Not with throttle, idempotencyKey or dependsOn; trailing: not with runAt or delayMs',
    }),
    throttle: throttleBodySchema.optional().meta({
      description:
        'throttle by key, per tenant and queue: further enqueues in a full window are dropped, answering the last job created (docs/debounce.md)',
    }),
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
  })
  .superRefine(refineWindow) satisfies z.ZodType<JobSpec>;

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
    cursor: z
      .string()
      .refine((c) => ID_PATTERN.test(c) || SHARDED_CURSOR_PATTERN.test(c), 'must be the nextCursor of an earlier page')
      .optional()
      .meta({
        description:
          'the nextCursor of the previous page: the page continues right after it (exact listings in id order only; not with offset)',
      }),
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

/** Path parameter of /api/jobs/:id/…: any string; one that cannot name a job (isJobId) is simply 404 JOB_NOT_FOUND. */
export const jobIdParamSchema = z.object({
  id: z.string().meta({ description: 'the job id, a decimal integer; one that names no job answers 404 JOB_NOT_FOUND' }),
});

export const dlqReplayQuerySchema = z
  .object({
    limit: intParam(1, DLQ_REPLAY_LIMIT_MAX, DLQ_REPLAY_LIMIT_DEFAULT).optional(),
    queue: nameSchema.optional(),
    tenantId: nameSchema.optional(),
  })
  .strict();
