// Schedules over HTTP: the zod contracts of the requests (create or update, edit, list, preview).
// Objects are strict: an unknown field or parameter is a 400 naming it; expressions and zones are the engine's to check.

import { z } from 'zod';
import { PREVIEW_COUNT_MAX, SCHEDULE_LIST_MAX } from '../../core/cron/api.ts';
import { LIST_OFFSET_MAX, MAX_ATTEMPTS_MAX, MISFIRE_POLICIES, PRIORITY_MAX } from '../../index.ts';
import { CATCH_UP_LIMIT_DEFAULT, CATCH_UP_LIMIT_MAX } from '../../types/schedule.ts';
import { instantParam, intParam, nameSchema } from '../schemas.ts';

/** The fields of a schedule that can be set and edited (POST /api/cron, PATCH /api/cron/:id). */
const scheduleFields = {
  cron: z
    .string()
    .min(1)
    .max(200)
    .meta({ description: 'five fields (minute hour day-of-month month day-of-week), six with leading seconds, or a macro such as @daily' }),
  timezone: z.string().min(1).max(64).meta({ description: 'an IANA zone id such as Europe/London; a fixed offset is refused' }),
  jobType: nameSchema
    .optional()
    .meta({ description: "a job schedule: the job type of each occurrence's job (not `workflow:<name>`: give `workflow`)" }),
  workflow: z.string().min(1).max(200).optional().meta({
    description:
      'a workflow schedule, instead of jobType: each occurrence starts one run of this workflow; 404 WORKFLOW_NOT_FOUND when no process ever defined it',
  }),
  input: z.unknown().optional().meta({ description: 'a workflow schedule: the input of every run (any JSON; absent: null)' }),
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
