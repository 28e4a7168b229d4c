// /api/cron: schedules, each route declared once (route-spec.ts). Create or update by (tenantId,
// name), list, read, edit / pause / resume, remove, and preview an expression's next fire instants.
// Expressions and zones are checked by the engine; tenant-scoped: another tenant's schedule is not found.

import type { Baton, ScheduleInput } from '../../index.ts';
import { BODY, CRON, ENGINE, GUARDED, WRITE } from '../route-errors.ts';
import { defineRoute, json, type ResourceApi, routes } from '../route-spec.ts';
import { scopeOf } from '../tenant-scope.ts';
import { toWireSchedule } from '../wire.ts';
import { responseSchemas as r, wireFireInstantSchema, wireScheduleSchema } from '../wire-schemas.ts';
import {
  cronPreviewQuerySchema,
  listSchedulesQuerySchema,
  scheduleBodySchema,
  scheduleIdParamSchema,
  schedulePatchSchema,
} from './schemas.ts';

const upsertSchedule = defineRoute({
  method: 'post',
  path: '/api/cron',
  operationId: 'upsertSchedule',
  tag: 'cron',
  summary: 'Create a schedule, or update it by (tenantId, name)',
  description:
    'Answers `{ schedule, created }`, as baton.cron.upsert returns. Each occurrence becomes an ordinary job (idempotency key cron:<id>:<instant>, run_at the occurrence), or with `workflow` one run of that workflow (the same idempotency key). An update that keeps the expression and zone keeps the next fire time. 404 WORKFLOW_NOT_FOUND when `workflow` names a workflow no process ever defined.',
  body: { schema: scheduleBodySchema, required: true },
  responses: { 201: json('created', r.scheduleUpserted), 200: json('updated, or unchanged', r.scheduleUpserted) },
  errors: [...CRON, 'WORKFLOW_NOT_FOUND', ...BODY, ...ENGINE, ...WRITE, 'FORBIDDEN_TENANT'],
});

const listSchedules = defineRoute({
  method: 'get',
  path: '/api/cron',
  operationId: 'listSchedules',
  tag: 'cron',
  summary: 'List schedules by tenant and name',
  query: listSchedulesQuerySchema,
  responses: { 200: json('a page of schedules', r.schedules) },
  errors: [...ENGINE, ...GUARDED, 'FORBIDDEN_TENANT'],
});

const previewCron = defineRoute({
  method: 'get',
  path: '/api/cron/preview',
  operationId: 'previewCron',
  tag: 'cron',
  summary: "An expression's next fire instants in a zone, in UTC and local time",
  query: cronPreviewQuerySchema,
  responses: { 200: json('the next fire instants', r.cronPreview) },
  errors: [...CRON, ...ENGINE, ...GUARDED],
});

const getSchedule = defineRoute({
  method: 'get',
  path: '/api/cron/:id',
  operationId: 'getSchedule',
  tag: 'cron',
  summary: 'Read a schedule: next fire time, last fired occurrence, status and disabled reason',
  params: scheduleIdParamSchema,
  responses: { 200: json('the schedule', wireScheduleSchema) },
  errors: ['SCHEDULE_NOT_FOUND', ...ENGINE, ...GUARDED],
});

const updateSchedule = defineRoute({
  method: 'patch',
  path: '/api/cron/:id',
  operationId: 'updateSchedule',
  tag: 'cron',
  summary: 'Edit, pause or resume a schedule',
  description:
    '`paused: true` pauses (occurrences meanwhile are not made up for); `paused: false` resumes from the next occurrence after now, and re-enables a disabled schedule. 409 SCHEDULE_CONFLICT when it changed meanwhile.',
  params: scheduleIdParamSchema,
  body: { schema: schedulePatchSchema, required: true },
  responses: { 200: json('the schedule as edited', wireScheduleSchema) },
  errors: ['SCHEDULE_NOT_FOUND', 'SCHEDULE_CONFLICT', 'WORKFLOW_NOT_FOUND', ...CRON, ...BODY, ...ENGINE, ...WRITE],
});

const removeSchedule = defineRoute({
  method: 'delete',
  path: '/api/cron/:id',
  operationId: 'removeSchedule',
  tag: 'cron',
  summary: 'Remove a schedule (jobs already enqueued stay)',
  params: scheduleIdParamSchema,
  body: 'none',
  responses: { 200: json('removed', r.scheduleRemoved) },
  errors: ['SCHEDULE_NOT_FOUND', ...BODY, ...ENGINE, ...WRITE],
});

/** The resource as the OpenAPI document lists it. */
export const CRON_API = {
  tag: { name: 'cron', description: 'schedules: recurring jobs from cron expressions in IANA zones' },
  components: { Schedule: wireScheduleSchema, FireInstant: wireFireInstantSchema },
  requestComponents: { ScheduleSpec: scheduleBodySchema },
  routes: [upsertSchedule, listSchedules, previewCron, getSchedule, updateSchedule, removeSchedule],
} satisfies ResourceApi;

export function cronRoutes(baton: Baton, maxJsonDepth: number) {
  /** For a tenant key: 404 SCHEDULE_NOT_FOUND unless the schedule is its tenant's (an admin's request reads nothing). */
  const guard = (c: Parameters<typeof scopeOf>[0], id: string) => scopeOf(c).guard((within) => baton.cron.get(id, within));
  return (
    routes({ maxJsonDepth })
      /** `{ schedule, created }`, the shape baton.cron.upsert returns: 201 new, 200 updated (or unchanged). */
      .add(upsertSchedule, async (c) => {
        const body = c.req.valid('json');
        // Which target (jobType or workflow) the body names is the engine's to check: 400 naming it.
        const r = await baton.cron.upsert({ ...body, tenantId: scopeOf(c).tenant(body.tenantId) } as ScheduleInput);
        return c.json({ schedule: toWireSchedule(r.schedule), created: r.created }, r.created ? 201 : 200);
      })
      .add(listSchedules, async (c) => {
        const q = c.req.valid('query');
        const limit = q.limit ?? 100;
        const offset = q.offset ?? 0;
        const tenantId = scopeOf(c).tenant(q.tenantId);
        const schedules = await baton.cron.list({ ...(tenantId ? { tenantId } : {}), limit, offset });
        return c.json({ schedules: schedules.map(toWireSchedule), limit, offset }, 200);
      })
      // Before /:id, which would otherwise take "preview" for an id.
      .add(previewCron, (c) => {
        const q = c.req.valid('query');
        const fires = baton.cron.preview({ cron: q.cron, timezone: q.timezone, count: q.count ?? 10, ...(q.from ? { from: q.from } : {}) });
        return c.json({ cron: q.cron, timezone: q.timezone, fires }, 200);
      })
      .add(getSchedule, async (c) => {
        const { id } = c.req.valid('param');
        // A tenant key's read is limited to its tenant in the statement: another tenant's schedule is not found.
        const schedule = await baton.cron.get(id, scopeOf(c).within);
        return c.json(toWireSchedule(schedule), 200);
      })
      .add(updateSchedule, async (c) => {
        const { id } = c.req.valid('param');
        await guard(c, id);
        const s = await baton.cron.update(id, c.req.valid('json'));
        return c.json(toWireSchedule(s), 200);
      })
      .add(removeSchedule, async (c) => {
        const { id } = c.req.valid('param');
        await guard(c, id);
        await baton.cron.remove(id);
        return c.json({ id, removed: true as const }, 200);
      }).app
  );
}
