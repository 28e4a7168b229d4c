// Workflow runs over HTTP: the zod contracts of the requests (bodies and parameters are
// strict, as everywhere) and of the answers, and the mapping of runs onto the wire.

import type { JSONValue } from 'hono/utils/types';
import { z } from 'zod';
import { LIST_LIMIT_DEFAULT } from '../../core/admin.ts';
import { DELAY_MS_MAX, refineWindow } from '../../core/job-spec.ts';
import {
  IDEMPOTENCY_KEY_MAX_CHARS,
  LIST_LIMIT_MAX,
  LIST_OFFSET_MAX,
  RUN_STATES,
  type RunDetail,
  type RunSummary,
  STEP_KINDS,
  STEP_STATUSES,
} from '../../index.ts';
import { debounceBodySchema, throttleBodySchema } from '../jobs/schemas.ts';
import { cursorParam, intParam, nameSchema, nextCursorSchema } from '../schemas.ts';
import { toWireAttemptError } from '../wire.ts';
import { jobRef, wireAttemptErrorSchema } from '../wire-schemas.ts';

const key = z
  .string()
  .min(1)
  .max(IDEMPOTENCY_KEY_MAX_CHARS)
  .refine((s) => !s.includes('\u0000'), 'must not contain NUL bytes');
const anyJson = z.unknown().meta({ description: 'any JSON' });

export const workflowNameParamSchema = z.object({
  name: nameSchema.meta({ description: 'a workflow in the registry of defined workflows, defined by any process (percent-encode "/")' }),
});

/** Any string: one that cannot name a run answers 404 RUN_NOT_FOUND. */
export const runIdParamSchema = z.object({
  id: z.string().meta({ description: 'the run id, a decimal integer; one that names no run answers 404 RUN_NOT_FOUND' }),
});

export const runEventParamSchema = runIdParamSchema.extend({
  name: key.meta({ description: 'the event name a wait names' }),
});

export const startRunBodySchema = z
  .strictObject({
    input: anyJson.optional(),
    tenantId: nameSchema.optional(),
    idempotencyKey: key.optional().meta({ description: 'a second start with the same (tenantId, key) answers the first run, 200' }),
    runTimeoutMs: z
      .int()
      .min(1)
      .max(DELAY_MS_MAX)
      .optional()
      .meta({ description: "ms from the start until the run times out (state timed_out); default: the workflow's runTimeoutMs" }),
    debounce: debounceBodySchema.optional().meta({
      description:
        "debounce by key, per tenant and the workflow's queue (docs/debounce.md, Workflow runs): trailing folds the start into the key's run while its driving job is pending and unclaimed (its input becomes this one), leading drops starts within the window. Not with throttle or idempotencyKey",
    }),
    throttle: throttleBodySchema.optional().meta({
      description:
        "throttle by key, per tenant and the workflow's queue: starts in a full window are dropped, answering the last run created (docs/debounce.md). Not with debounce or idempotencyKey",
    }),
  })
  // The combinations refused as for a job, naming the field (400).
  .superRefine(refineWindow);

export const sendEventBodySchema = z.strictObject({
  payload: anyJson.optional(),
  idempotencyKey: key.optional().meta({ description: 'a second event with the same key for this run is absorbed, 200' }),
});

export const listRunsQuerySchema = z
  .object({
    name: nameSchema.optional(),
    state: z.enum(RUN_STATES).optional(),
    tenantId: nameSchema.optional(),
    limit: intParam(1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT).optional(),
    offset: intParam(0, LIST_OFFSET_MAX).optional(),
    cursor: cursorParam,
  })
  .strict();

const time = z
  .string()
  .regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  .meta({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds (Date#toISOString)' });
const decimal = z.string().regex(/^[1-9][0-9]*$/);
const count = z.int().min(0);

export const wireRunSummarySchema = z.strictObject({
  id: decimal,
  name: z.string(),
  tenantId: z.string(),
  state: z.enum(RUN_STATES),
  jobId: jobRef.nullable().meta({ description: 'the driving job (`<cluster>:<id>` from a server over several clusters)' }),
  progress: count.meta({
    description: 'the position after the furthest committed step (completed steps, for steps run one after another); never decreases',
  }),
  waitEvent: z.string().nullable().meta({ description: 'while waiting: the event name' }),
  wakeAt: time.nullable().meta({ description: 'while sleeping or waiting: when it resumes at the latest' }),
  blockedReason: z
    .strictObject({ code: z.literal('NON_DETERMINISM'), message: z.string(), steps: z.array(z.string()) })
    .nullable()
    .meta({ description: 'while blocked: why its code cannot replay its history (replay resumes it, cancel ends it)' }),
  replayCount: count,
  createdAt: time,
  updatedAt: time,
  finishedAt: time.nullable(),
  deadlineAt: time.nullable().meta({ description: 'when the run times out (runTimeoutMs); null: never' }),
});

export const wireStepSchema = z.strictObject({
  key: z.string().meta({ description: 'name, or name#n for its n-th occurrence in the run' }),
  name: z.string(),
  occurrence: z.int().min(1),
  seq: count.meta({ description: 'its position in the run' }),
  kind: z.enum(STEP_KINDS),
  status: z.enum(STEP_STATUSES),
  attempts: count,
  output: anyJson,
  error: anyJson,
  waitEvent: z.string().nullable(),
  wakeAt: time.nullable(),
  startedAt: time,
  finishedAt: time.nullable(),
});

export const wireRunSchema = wireRunSummarySchema.extend({
  input: anyJson,
  output: anyJson,
  attempt: count.nullable().meta({ description: "the driving job's attempts spent (refunded by waits)" }),
  maxAttempts: z.int().min(1).nullable(),
  errors: z.array(wireAttemptErrorSchema).meta({ description: 'the failure chain, oldest first' }),
  deadLetterReason: z.string().nullable(),
  steps: z.array(wireStepSchema),
});

export const workflowResponseSchemas = {
  started: z.strictObject({
    run: wireRunSummarySchema,
    duplicate: z.boolean(),
    collapsedBy: z.enum(['debounce', 'throttle']).optional().meta({
      description:
        "present when the start's debounce or throttle kept it from creating a run: it was folded into the run answered, or dropped",
    }),
  }),
  runPage: z.strictObject({ runs: z.array(wireRunSummarySchema), limit: z.int(), offset: z.int(), nextCursor: nextCursorSchema('run') }),
  event: z.strictObject({
    eventId: decimal,
    duplicate: z.boolean(),
    resumed: z.boolean().meta({ description: 'the event woke the run waiting for it' }),
  }),
};

const iso = (d: Date): string => d.toISOString();
const isoOrNull = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function toWireRunSummary(r: RunSummary) {
  return {
    id: r.id,
    name: r.name,
    tenantId: r.tenantId,
    state: r.state,
    jobId: r.jobId,
    progress: r.progress,
    waitEvent: r.waitEvent,
    wakeAt: isoOrNull(r.wakeAt),
    blockedReason: r.blockedReason,
    replayCount: r.replayCount,
    createdAt: iso(r.createdAt),
    updatedAt: iso(r.updatedAt),
    finishedAt: isoOrNull(r.finishedAt),
    deadlineAt: isoOrNull(r.deadlineAt),
  };
}

export function toWireRun(r: RunDetail) {
  return {
    ...toWireRunSummary(r),
    input: r.input as JSONValue,
    output: (r.output ?? null) as JSONValue,
    attempt: r.attempt,
    maxAttempts: r.maxAttempts,
    errors: r.errors.map(toWireAttemptError),
    deadLetterReason: r.deadLetterReason,
    steps: r.steps.map((s) => ({
      key: s.key,
      name: s.name,
      occurrence: s.occurrence,
      seq: s.seq,
      kind: s.kind,
      status: s.status,
      attempts: s.attempts,
      output: (s.output ?? null) as JSONValue,
      error: (s.error ?? null) as JSONValue,
      waitEvent: s.waitEvent,
      wakeAt: isoOrNull(s.wakeAt),
      startedAt: iso(s.startedAt),
      finishedAt: isoOrNull(s.finishedAt),
    })),
  };
}
