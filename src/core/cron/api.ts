// baton.cron: create, read, edit, pause, resume, remove and preview schedules. Every input
// is validated here (zod, the expression, the zone, the job it would enqueue) before any SQL
// runs; a change is announced to every ticker by NOTIFY and to this process's at once.

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
    jobType: nameSchema,
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
}

type Definition = Omit<ScheduleWrite, 'tenantId' | 'name'>;

/** Validates a whole definition: the expression, the zone, and the job it would enqueue. Computes the next fire time. */
export function validateDefinition(
  d: z.output<typeof scheduleFieldsSchema>,
  tenantId: string,
  now: number,
  maxAttemptsDefault: number,
): Definition {
  const cron = parseCron(d.cron, d.timezone);
  const next = cron.next(new Date(now));
  if (next === null) throw new BatonError('INVALID_CRON_EXPRESSION', `cron expression ${JSON.stringify(d.cron)} never fires`);
  // The job each occurrence enqueues must be one the producer accepts (payload JSON-safe, no NUL).
  normalizeSpec(
    {
      jobType: d.jobType,
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
    jobType: d.jobType,
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
    const merged = {
      cron: p.cron ?? cur.cron,
      timezone: p.timezone ?? cur.timezone,
      jobType: p.jobType ?? cur.jobType,
      queue: p.queue ?? cur.queue,
      payload: 'payload' in p ? p.payload : cur.payload,
      priority: p.priority ?? cur.priority,
      ...((p.maxAttempts ?? cur.maxAttempts) === null ? {} : { maxAttempts: (p.maxAttempts ?? cur.maxAttempts) as number }),
      misfirePolicy: p.misfirePolicy ?? cur.misfirePolicy,
      catchUpLimit: p.catchUpLimit ?? cur.catchUpLimit,
    };
    const now = deps.now();
    const def = validateDefinition(merged, cur.tenantId, now, deps.maxAttemptsDefault);
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
      const def = validateDefinition(i, tenantId, deps.now(), deps.maxAttemptsDefault);
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
