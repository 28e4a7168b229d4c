// baton.cron: create, read, edit, pause, resume, remove and preview schedules. Every input
// is validated here (zod, the expression, the zone, the job it would enqueue or the workflow it
// would start, which the registry of defined workflows must know) before any write; a change
// is announced to every ticker by NOTIFY and to this process's at once.

import { z } from 'zod';
import type { ScheduleStore, ScheduleWrite } from '../../driver/schedule-store.ts';
import { BatonError } from '../../types/errors.ts';
import {
  CATCH_UP_LIMIT_DEFAULT,
  CATCH_UP_LIMIT_MAX,
  MISFIRE_POLICIES,
  MISFIRE_POLICY_DEFAULT,
  type Schedule,
  type ScheduleInput,
  type SchedulePatch,
} from '../../types/schedule.ts';
import { nameSchema } from '../config.ts';
import { MAX_ATTEMPTS_MAX, normalizeSpec, PRIORITY_MAX } from '../job-spec.ts';
import { CRON_MAX_CHARS, type FireInstant, parseCron, previewCron } from './expression.ts';

export const PREVIEW_COUNT_MAX = 100;
export const SCHEDULE_LIST_MAX = 1_000;

/** Recurring jobs, `baton.cron`: create, read, edit, pause, resume, remove and preview schedules (docs/cron.md). */
export interface CronApi {
  /** Creates or updates a schedule by (tenantId, name). An unchanged definition is left as it is. */
  upsert(input: ScheduleInput): Promise<{ schedule: Schedule; created: boolean }>;
  /**
   * Throws BatonError SCHEDULE_NOT_FOUND. With `tenantId`, another tenant's schedule is not
   * found exactly as an id nobody has, at the same cost: the read itself is limited to the tenant.
   */
  get(id: string, opts?: { tenantId?: string | undefined }): Promise<Schedule>;
  list(opts?: { tenantId?: string; limit?: number; offset?: number }): Promise<Schedule[]>;
  /** Edits any field, pauses ({ paused: true }) or resumes ({ paused: false }). */
  update(id: string, patch: SchedulePatch): Promise<Schedule>;
  /** Stops firing until resumed; occurrences meanwhile are not made up for. */
  pause(id: string): Promise<Schedule>;
  /** Fires again from the next occurrence after now (also re-enables a disabled schedule). */
  resume(id: string): Promise<Schedule>;
  /** Throws BatonError SCHEDULE_NOT_FOUND. Jobs already enqueued stay. */
  remove(id: string): Promise<void>;
  /** The next `count` fire instants after `from` (default now), in UTC and local time. */
  preview(p: { cron: string; timezone: string; count?: number; from?: Date }): FireInstant[];
}

export const scheduleFieldsSchema = z
  .object({
    cron: z.string().min(1).max(CRON_MAX_CHARS),
    timezone: z.string().min(1).max(64),
    jobType: nameSchema.optional(),
    workflow: z.string().min(1).max(200).optional(),
    input: z.unknown().optional(),
    queue: nameSchema.optional(),
    payload: z.unknown().optional(),
    priority: z.number().int().min(-PRIORITY_MAX).max(PRIORITY_MAX).optional(),
    maxAttempts: z.number().int().min(1).max(MAX_ATTEMPTS_MAX).optional(),
    misfirePolicy: z.enum(MISFIRE_POLICIES).optional(),
    catchUpLimit: z.number().int().min(1).max(CATCH_UP_LIMIT_MAX).optional(),
  })
  .strict();
export const scheduleInputSchema = scheduleFieldsSchema.extend({ name: nameSchema, tenantId: nameSchema.optional() }).strict();
export const schedulePatchSchema = scheduleFieldsSchema.partial().extend({ paused: z.boolean().optional() }).strict();

function parseOrThrow<T>(schema: z.ZodType<T>, input: unknown, what: string): T {
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new BatonError('INVALID_ARGUMENT', `invalid ${what}: ${issues.join('; ')}`, { details: issues });
  }
  return parsed.data;
}

export interface CronApiDeps {
  store: ScheduleStore;
  maxAttemptsDefault: number;
  /** Wall-clock time (epoch ms). */
  now: () => number;
  /** Wakes this process's ticker (others hear the NOTIFY). */
  changed: () => void;
  onNotifyError: (err: unknown) => void;
  /** The registry's queue of a workflow; throws WORKFLOW_NOT_FOUND for a name no process defines. */
  resolveWorkflow: (name: string) => Promise<{ queue: string }>;
  /** Why this process's input schema of workflow `name` refuses `input` (null: accepted, or no schema here). */
  workflowInputRefusal?: (name: string, input: unknown) => string | null;
}

type Definition = Omit<ScheduleWrite, 'tenantId' | 'name'>;
type Fields = z.output<typeof scheduleFieldsSchema>;

const WORKFLOW_JOB_TYPE = 'workflow:';

function badTarget(message: string): BatonError {
  return new BatonError('INVALID_ARGUMENT', `invalid schedule: ${message}`, { details: [message] });
}

/**
 * The target's shape, checked before any lookup: a job (jobType, with queue, payload, priority,
 * maxAttempts) or a workflow run (workflow, with input), never both; and never a workflow's
 * driving job type used as a job (its occurrences would carry no run and dead-letter).
 */
export function checkTarget(d: Fields): void {
  if (d.workflow !== undefined) {
    if (d.jobType !== undefined) throw badTarget('give jobType (a job) or workflow (a workflow run), not both');
    const extra = (['queue', 'payload', 'priority', 'maxAttempts'] as const).filter((k) => d[k] !== undefined);
    if (extra.length > 0)
      throw badTarget(`a workflow schedule takes input only (the run's queue and attempts are the workflow's): remove ${extra.join(', ')}`);
    return;
  }
  if (d.jobType === undefined) throw badTarget('give jobType (a job) or workflow (a workflow run)');
  if (d.input !== undefined) throw badTarget('input is the input of a workflow schedule; a job schedule takes payload');
  if (d.jobType.startsWith(WORKFLOW_JOB_TYPE)) {
    const name = d.jobType.slice(WORKFLOW_JOB_TYPE.length);
    throw badTarget(
      `jobType ${JSON.stringify(d.jobType)} is a workflow's driving job, which needs a run: schedule the workflow with { workflow: ${JSON.stringify(name)}, input } instead`,
    );
  }
}

/**
 * Validates a whole definition: the expression, the zone, and what each occurrence does (the job
 * it would enqueue, or the run it would start of the workflow whose queue is `workflowQueue`,
 * looked up by the caller). Computes the next fire time.
 */
export function validateDefinition(
  d: Fields,
  tenantId: string,
  now: number,
  maxAttemptsDefault: number,
  workflowQueue?: string,
): Definition {
  checkTarget(d);
  const cron = parseCron(d.cron, d.timezone);
  const next = cron.next(new Date(now));
  if (next === null) throw new BatonError('INVALID_CRON_EXPRESSION', `cron expression ${JSON.stringify(d.cron)} never fires`);
  if (d.workflow !== undefined) {
    // The run's input is stored as jsonb like a payload: it must be JSON-safe, without NUL.
    normalizeSpec({ jobType: `${WORKFLOW_JOB_TYPE}${d.workflow}`, tenantId, payload: d.input ?? null }, maxAttemptsDefault);
    return {
      cron: cron.expression,
      timezone: cron.timezone,
      jobType: `${WORKFLOW_JOB_TYPE}${d.workflow}`,
      workflow: d.workflow,
      queue: workflowQueue ?? 'default',
      payload: d.input ?? null,
      priority: 0,
      maxAttempts: null,
      misfirePolicy: d.misfirePolicy ?? MISFIRE_POLICY_DEFAULT,
      catchUpLimit: d.catchUpLimit ?? CATCH_UP_LIMIT_DEFAULT,
      nextFireAt: next,
    };
  }
  // The job each occurrence enqueues must be one the producer accepts (payload JSON-safe, no NUL).
  normalizeSpec(
    {
      jobType: d.jobType as string,
      queue: d.queue ?? 'default',
      tenantId,
      payload: d.payload ?? null,
      ...(d.priority === undefined ? {} : { priority: d.priority }),
      ...(d.maxAttempts === undefined ? {} : { maxAttempts: d.maxAttempts }),
    },
    maxAttemptsDefault,
  );
  return {
    cron: cron.expression,
    timezone: cron.timezone,
    jobType: d.jobType as string,
    workflow: null,
    queue: d.queue ?? 'default',
    payload: d.payload ?? null,
    priority: d.priority ?? 0,
    maxAttempts: d.maxAttempts ?? null,
    misfirePolicy: d.misfirePolicy ?? MISFIRE_POLICY_DEFAULT,
    catchUpLimit: d.catchUpLimit ?? CATCH_UP_LIMIT_DEFAULT,
    nextFireAt: next,
  };
}

export function createCronApi(deps: CronApiDeps): CronApi {
  const { store } = deps;
  /** validateDefinition, with a workflow target looked up in the registry (unknown: WORKFLOW_NOT_FOUND). */
  const validate = async (d: Fields, tenantId: string, inputChanged: boolean): Promise<Definition> => {
    checkTarget(d);
    const queue = d.workflow === undefined ? undefined : (await deps.resolveWorkflow(d.workflow)).queue;
    // Defined here: an input its schema refuses would dead-letter every occurrence's run, so it is refused now.
    // The value checked is the one stored (jsonb-normalised); a value that is not JSON is refused below.
    let stored: unknown;
    try {
      stored = JSON.parse(JSON.stringify(d.input ?? null) ?? 'null');
    } catch {
      stored = undefined;
    }
    const why =
      !inputChanged || d.workflow === undefined || stored === undefined ? null : (deps.workflowInputRefusal?.(d.workflow, stored) ?? null);
    if (why !== null) throw badTarget(`the input of workflow ${JSON.stringify(d.workflow)} is invalid: ${why}`);
    return validateDefinition(d, tenantId, deps.now(), deps.maxAttemptsDefault, queue);
  };
  const announce = () => {
    deps.changed();
    store.scheduleNotifyChanged().catch(deps.onNotifyError);
  };
  const mustGet = async (id: string, opts: { tenantId?: string | undefined } = {}): Promise<Schedule> => {
    const s = await store.scheduleGet(String(id), opts.tenantId);
    if (!s) throw new BatonError('SCHEDULE_NOT_FOUND', `schedule ${id} not found`, { details: { id } });
    return s;
  };
  const update = async (id: string, patch: SchedulePatch): Promise<Schedule> => {
    const p = parseOrThrow(schedulePatchSchema, patch, 'schedule patch');
    const cur = await mustGet(id);
    const timing = {
      cron: p.cron ?? cur.cron,
      timezone: p.timezone ?? cur.timezone,
      misfirePolicy: p.misfirePolicy ?? cur.misfirePolicy,
      catchUpLimit: p.catchUpLimit ?? cur.catchUpLimit,
    };
    // The target the patch names (jobType or workflow), else the current one with the patch's fields on it.
    const asWorkflow = p.workflow !== undefined || (p.jobType === undefined && cur.workflow !== null);
    const merged: Fields = asWorkflow
      ? {
          ...timing,
          workflow: p.workflow ?? (cur.workflow as string),
          input: 'input' in p ? p.input : cur.workflow === null ? undefined : cur.payload,
          ...(p.jobType === undefined ? {} : { jobType: p.jobType }),
          // Job fields given with a workflow target are refused by checkTarget, naming them.
          queue: p.queue,
          payload: p.payload,
          priority: p.priority,
          maxAttempts: p.maxAttempts,
        }
      : {
          ...timing,
          jobType: p.jobType ?? cur.jobType,
          queue: p.queue ?? (cur.workflow === null ? cur.queue : undefined),
          payload: 'payload' in p ? p.payload : cur.workflow === null ? cur.payload : undefined,
          priority: p.priority ?? (cur.workflow === null ? cur.priority : undefined),
          ...((p.maxAttempts ?? cur.maxAttempts) === null ? {} : { maxAttempts: (p.maxAttempts ?? cur.maxAttempts) as number }),
          ...(p.input === undefined ? {} : { input: p.input }),
        };
    // The input is checked when it or the workflow changes: a pause or a timing edit of a schedule
    // whose input a since-tightened schema refuses must still go through.
    const def = await validate(merged, cur.tenantId, p.workflow !== undefined || 'input' in p);
    // An edit keeps a pause; a disabled schedule that now validates fires again.
    const enabled = p.paused === undefined ? cur.status !== 'paused' : !p.paused;
    // Keep the stored next fire time unless the timing changed or the schedule starts firing again:
    // occurrences missed meanwhile stay for the misfire policy; a pause is not made up for.
    const sameTiming = def.cron === cur.cron && def.timezone === cur.timezone;
    const keep = enabled && cur.status === 'enabled' && sameTiming && cur.nextFireAt !== null;
    const write = { ...def, nextFireAt: enabled ? (keep ? cur.nextFireAt : def.nextFireAt) : null };
    const out = await store.scheduleUpdate({ id: cur.id, version: cur.version, write, enabled });
    if (!out) {
      throw new BatonError('SCHEDULE_CONFLICT', `schedule ${id} was changed or removed meanwhile; read it again and retry`, {
        details: { id },
      });
    }
    announce();
    return out;
  };
  return {
    async upsert(input) {
      const i = parseOrThrow(scheduleInputSchema, input, 'schedule');
      const tenantId = i.tenantId ?? 'default';
      const def = await validate(i, tenantId, true);
      const r = await store.scheduleUpsert({ tenantId, name: i.name, ...def });
      if (r.changed) announce();
      return { schedule: r.schedule, created: r.created };
    },
    get: mustGet,
    async list(opts = {}) {
      const o = parseOrThrow(
        z
          .object({
            tenantId: nameSchema.optional(),
            limit: z.number().int().min(1).max(SCHEDULE_LIST_MAX).optional(),
            offset: z.number().int().min(0).optional(),
          })
          .strict(),
        opts,
        'list options',
      );
      return store.scheduleList({ tenantId: o.tenantId, limit: o.limit ?? 100, offset: o.offset ?? 0 });
    },
    update,
    pause: (id) => update(id, { paused: true }),
    resume: (id) => update(id, { paused: false }),
    async remove(id) {
      if (!(await store.scheduleRemove(String(id))))
        throw new BatonError('SCHEDULE_NOT_FOUND', `schedule ${id} not found`, { details: { id } });
      announce();
    },
    preview(p) {
      const o = parseOrThrow(
        z
          .object({
            cron: z.string(),
            timezone: z.string(),
            count: z.number().int().min(1).max(PREVIEW_COUNT_MAX).optional(),
            from: z.date().optional(),
          })
          .strict(),
        p,
        'preview',
      );
      return previewCron(parseCron(o.cron, o.timezone), o.count ?? 10, o.from ?? new Date(deps.now()));
    },
  };
}
