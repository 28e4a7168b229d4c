// Zod schemas of what wire.ts puts on the wire, and of the error body: the one
// description of each response, used for the OpenAPI document (openapi-routes.ts)
// and, in test/http/openapi.test.ts, to check real responses against it. Strict
// objects: a field the wire gains or loses without this file is caught.

import { z } from 'zod';
import {
  ATTEMPT_ERROR_KINDS,
  BULK_ACTIONS,
  DEBOUNCE_MODES,
  ENQUEUE_WARNING_CODES,
  ERROR_CODES,
  JOB_SORT_WINDOW,
  JOB_STATES,
  type JobState,
  MISFIRE_POLICIES,
} from '../index.ts';
import { type ApiErrorCode, HTTP_ERROR_CODES } from './errors.ts';

/** Every code an error body may carry. */
export const API_ERROR_CODES = [...ERROR_CODES, ...HTTP_ERROR_CODES] as const satisfies readonly ApiErrorCode[];

/** Every error answer's body. */
export const errorBodySchema = z.strictObject({
  error: z.strictObject({
    code: z.enum(API_ERROR_CODES),
    message: z.string().meta({ description: 'for people; a 5xx carries a generic one' }),
    details: z.unknown().optional().meta({ description: 'JSON, e.g. { issues: [{ path, message }] } for a refused field' }),
  }),
});

const time = z
  .string()
  .regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  .meta({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds (Date#toISOString)' });
const decimal = z.string().regex(/^[0-9]+$/);
/** A job's id: decimal, or `<cluster>:<decimal>` on a sharded server (isJobRef). */
export const jobRef = z.string().regex(/^(?:[a-z][a-z0-9_]{0,15}:)?[1-9][0-9]*$/);
const count = z.int().min(0);
const anyJson = z.unknown().meta({ description: 'any JSON' });

export const wireAttemptErrorSchema = z.strictObject({
  attempt: count,
  token: decimal.meta({ description: 'the lease the attempt ran under' }),
  kind: z.enum(ATTEMPT_ERROR_KINDS),
  name: z.string(),
  message: z.string(),
  stack: z.string().optional().meta({ description: "the handler's stack, at most 8,000 characters; full jobs only" }),
  at: z.iso.datetime({ offset: true }).meta({ description: 'ISO 8601 with offset, as the database clock wrote it' }),
});

const summaryAttemptError = wireAttemptErrorSchema.omit({ stack: true });

/** The fields a job and its summary share (wireCommon in wire.ts). */
const common = {
  id: jobRef.meta({ description: 'decimal bigint; `<cluster>:<id>` from a server over several clusters (BATON_CLUSTERS)' }),
  tenantId: z.string(),
  queue: z.string(),
  jobType: z.string(),
  priority: z.int(),
  runAt: time,
  attempt: count,
  maxAttempts: z.int().min(1),
  idempotencyKey: z.string().nullable(),
  replayCount: count,
  createdAt: time,
  updatedAt: time,
  startedAt: time.nullable(),
  trace: z
    .strictObject({ traceparent: z.string(), tracestate: z.string().optional() })
    .nullable()
    .meta({ description: 'the W3C trace context the job was enqueued in (traceparent, tracestate); null if none' }),
  cancelRequestedAt: time.nullable().meta({
    description:
      'when a cancel was requested while the job was leased or running; the state says how it ended (cancelled, or succeeded when the handler finished anyway); null otherwise',
  }),
  progress: z
    .union([z.number().min(0).max(100), z.record(z.string(), z.unknown())])
    .nullable()
    .optional()
    .meta({
      description:
        'the latest progress a handler stored (ctx.progress): a number 0..100 or a JSON object of at most 2,048 bytes; null when none; absent on a claimed lease',
    }),
  dependsOn: z
    .array(jobRef)
    .optional()
    .meta({ description: 'the jobs it was enqueued to wait for (dependsOn); absent when none or on a claimed lease' }),
  enqueueWindow: z
    .discriminatedUnion('kind', [
      z.strictObject({
        kind: z.literal('debounce'),
        key: z.string(),
        windowMs: z.int().min(1),
        mode: z.enum(DEBOUNCE_MODES),
        maxWaitMs: z.int().min(1).nullable(),
      }),
      z.strictObject({ kind: z.literal('throttle'), key: z.string(), windowMs: z.int().min(1), limit: z.int().min(1) }),
    ])
    .optional()
    .meta({
      description:
        "the debounce or throttle rule its key holds the job under (docs/debounce.md): on the full job (GET /api/jobs/:id) and a windowed enqueue's answer; absent when none (a plain job, or one its key has moved on from) and in listings",
    }),
};

/** The fields only some states carry, by state. */
const lastToken = decimal.nullable().meta({ description: 'token of the last lease; null if never claimed' });
const byState = {
  pending: { lastToken },
  waiting: { waitingFor: count.meta({ description: 'parents not finished yet' }) },
  live: { token: decimal, leaseOwner: z.string(), leaseExpiresAt: time },
  succeeded: { token: decimal, finishedAt: time },
  dead_lettered: { lastToken, reason: z.string(), finishedAt: time },
  cancelled: { lastToken, finishedAt: time },
};

/**
 * A discriminated union on `state` with `fields` in every variant, and `succeeded` (a succeeded
 * job's result fields) in that one; the same order of states as JOB_STATES.
 */
function jobUnion<F extends z.ZodRawShape, S extends z.ZodRawShape>(fields: F, succeeded: S) {
  const variant = <St extends readonly [JobState, ...JobState[]], X extends z.ZodRawShape>(states: St, extra: X) =>
    z.strictObject({ ...fields, state: z.enum(states), ...extra });
  return z.discriminatedUnion('state', [
    variant(['pending'], byState.pending),
    variant(['waiting'], byState.waiting),
    variant(['leased', 'running'], byState.live),
    variant(['succeeded'], { ...byState.succeeded, ...succeeded }),
    variant(['dead_lettered'], byState.dead_lettered),
    variant(['cancelled'], byState.cancelled),
  ]);
}

const fullJob = {
  ...common,
  payload: anyJson,
  errors: z.array(wireAttemptErrorSchema),
  lastError: wireAttemptErrorSchema.nullable(),
};

/** toWireJob. */
export const wireJobSchema = jobUnion(fullJob, { result: anyJson });

export const wireEnqueueWarningSchema = z.strictObject({
  code: z.enum(ENQUEUE_WARNING_CODES),
  message: z.string(),
  queue: z.string(),
  jobType: z.string(),
});
const warnings = z.array(wireEnqueueWarningSchema).meta({ description: 'empty when a live worker can run the job' });

const collapsedBy = z.enum(['debounce', 'throttle']).optional().meta({
  description:
    "present when the job's debounce or throttle kept this enqueue from creating a job: it was folded into the job answered, or dropped",
});

/** POST /api/jobs: the job and its enqueue warnings. */
export const wireEnqueuedJobSchema = jobUnion({ ...fullJob, warnings, collapsedBy }, { result: anyJson });

/** toWireResult. */
export const wireEnqueueResultSchema = z.strictObject({ created: z.boolean(), collapsedBy, job: wireJobSchema, warnings });

/** toWireSummary. */
export const wireJobSummarySchema = jobUnion(
  {
    ...common,
    payload: anyJson.optional().meta({ description: 'only when at most 2,048 stored bytes' }),
    payloadBytes: count,
    errorCount: count,
    lastError: summaryAttemptError.nullable(),
  },
  { result: anyJson.optional().meta({ description: 'only when at most 2,048 stored bytes' }), resultBytes: count },
);

/** toWireCounts: every state, always. */
export const wireStateCountsSchema = z.strictObject(
  Object.fromEntries(JOB_STATES.map((s) => [s, count])) as Record<JobState, typeof count>,
);

/** toWireWorker. */
export const wireWorkerSchema = z.strictObject({
  id: z.string(),
  hostname: z.string(),
  pid: z.int(),
  queues: z.record(z.string(), z.int()).meta({ description: 'queue -> concurrency' }),
  jobTypes: z.array(z.string()),
  inFlight: count,
  startedAt: time,
  lastSeenAt: time,
  alive: z.boolean(),
  leader: z.boolean(),
});

/** toWireSchedule. */
export const wireScheduleSchema = z.strictObject({
  id: z
    .string()
    .regex(/^[1-9][0-9]*$/)
    .meta({ description: 'decimal bigint' }),
  tenantId: z.string(),
  name: z.string(),
  cron: z.string(),
  timezone: z.string().meta({ description: 'IANA zone id' }),
  jobType: z.string().meta({ description: 'a workflow schedule reads `workflow:<name>`' }),
  workflow: z.string().nullable().meta({ description: 'the workflow each occurrence starts a run of; null for a job schedule' }),
  queue: z.string(),
  payload: anyJson.meta({ description: "the job's payload, or the run's input for a workflow schedule" }),
  priority: z.int(),
  maxAttempts: z.int().min(1).nullable().meta({ description: "null: the engine's default" }),
  misfirePolicy: z.enum(MISFIRE_POLICIES),
  catchUpLimit: z.int().min(1),
  status: z
    .enum(['enabled', 'paused', 'disabled'])
    .meta({ description: 'paused by an operator, or disabled by the scheduler (see disabledReason)' }),
  disabledReason: z.string().nullable(),
  nextFireAt: time.nullable().meta({ description: 'the next occurrence; null while paused or disabled' }),
  lastFiredAt: time.nullable().meta({ description: 'the instant of the last occurrence enqueued' }),
  version: decimal.meta({ description: 'bumped by every edit' }),
  createdAt: time,
  updatedAt: time,
});

export const wireFireInstantSchema = z.strictObject({
  utc: time,
  local: z.string().meta({ description: 'ISO 8601 wall-clock time in the zone, with its offset' }),
});

const truncated = z.boolean().meta({ description: 'the response size cap cut the list short' });

const queueState = {
  queue: z.string(),
  paused: z.boolean().meta({ description: 'no worker process claims from a paused queue' }),
  pausedAt: time.nullable(),
};

/** toWireQueue. */
export const wireQueueSchema = z.strictObject({ ...queueState, counts: wireStateCountsSchema });

const ms = z.number().min(0).nullable();

/** toWireStats. */
export const wireStatsSchema = z.strictObject({
  at: time.meta({ description: "the database's clock when the counts were read" }),
  queues: z.array(
    wireQueueSchema.extend({
      scheduled: count.meta({ description: 'pending jobs whose runAt lies ahead (counted in counts.pending too)' }),
    }),
  ),
  window: z.strictObject({
    seconds: z.int().min(1),
    succeeded: count.meta({ description: 'jobs that succeeded within the window (at most 100,000)' }),
    deadLettered: count,
    cancelled: count,
    startLatencyMs: z
      .strictObject({ count, p50: ms, p95: ms, max: ms })
      .meta({ description: 'run_at to started_at of the newest (at most 1,000) jobs that succeeded within the window' }),
  }),
});

/** toWireStatsHistory. */
export const wireStatsHistorySchema = z.strictObject({
  intervalMs: z.int().min(1).meta({ description: 'how often the daemon samples while someone reads the stats' }),
  windowSeconds: z.int().min(1).meta({ description: "the window each sample's counts and latencies cover" }),
  samples: z.array(
    z.strictObject({
      at: time.meta({ description: "the database's clock when the sample was read" }),
      succeeded: count.meta({ description: 'jobs that succeeded within the window' }),
      deadLettered: count,
      pending: count.meta({ description: 'pending jobs that are due' }),
      scheduled: count.meta({ description: 'pending jobs whose runAt lies ahead' }),
      live: count.meta({ description: 'leased or running jobs' }),
      p50: ms,
      p95: ms,
    }),
  ),
});

/** toWireBulkItem. */
export const wireBulkItemSchema = z.discriminatedUnion('ok', [
  z.strictObject({ id: z.string(), ok: z.literal(true), state: z.enum(JOB_STATES) }),
  z.strictObject({
    id: z.string(),
    ok: z.literal(false),
    error: z.strictObject({ code: z.enum(ERROR_CODES), message: z.string() }),
    state: z.enum(JOB_STATES).optional().meta({ description: 'the state that refused the action (409)' }),
  }),
]);

/** The bodies of the routes' successful answers, by route. */
export const responseSchemas = {
  jobPage: z.strictObject({
    jobs: z.array(wireJobSummarySchema),
    total: count,
    limit: count,
    offset: count,
    nextCursor: z.string().nullable().meta({
      description:
        'pass as cursor to read the next page (id order only): the id of the last job of this page; null on the last page and for a windowed listing',
    }),
    truncated,
    windowed: z.boolean().meta({
      description: `the listing sorted only the newest ${JOB_SORT_WINDOW} matching jobs (by id): a sort other than id or createdAt, or a due filter without state=pending; pages past them are empty`,
    }),
  }),
  batch: z.strictObject({ results: z.array(wireEnqueueResultSchema) }),
  dlqReplay: z.strictObject({ replayed: count, jobs: z.array(wireJobSummarySchema), truncated }),
  queues: z.strictObject({ queues: z.array(wireQueueSchema) }),
  queueState: z.strictObject(queueState),
  stats: wireStatsSchema,
  statsHistory: wireStatsHistorySchema,
  bulk: z.strictObject({ action: z.enum(BULK_ACTIONS), done: count, refused: count, results: z.array(wireBulkItemSchema) }),
  depth: z.strictObject({ queue: z.string(), counts: wireStateCountsSchema }),
  workers: z.strictObject({ workers: z.array(wireWorkerSchema) }),
  schedules: z.strictObject({ schedules: z.array(wireScheduleSchema), limit: count, offset: count }),
  scheduleRemoved: z.strictObject({ id: z.string(), removed: z.literal(true) }),
  scheduleUpserted: z.strictObject({ schedule: wireScheduleSchema, created: z.boolean() }),
  cronPreview: z.strictObject({ cron: z.string(), timezone: z.string(), fires: z.array(wireFireInstantSchema) }),
  health: z.strictObject({ status: z.literal('ok') }),
  ready: z.strictObject({ status: z.literal('ready'), db: z.literal('ok'), started: z.literal(true) }),
  openapi: z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.looseObject({}) }),
  text: z.string(),
};
