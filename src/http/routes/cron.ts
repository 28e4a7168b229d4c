// /api/cron: schedules. Create or update by (tenantId, name), list, read, edit / pause /
// resume, remove, and preview an expression's next fire instants. Expressions and zones are
// checked by the engine (400 INVALID_CRON_EXPRESSION / INVALID_TIMEZONE). Tenant-scoped
// (tenant-scope.ts): another tenant's schedule is not found.

import { zValidator } from '@hono/zod-validator';
import { Hono } from 'hono';
import type { Baton } from '../../index.ts';
import type { AppEnv } from '../context.ts';
import { validationHook } from '../errors.ts';
import { jsonBody, noBody } from '../json-body.ts';
import { BODY, CRON, ENGINE, fails, GUARDED, WRITE } from '../route-errors.ts';
import {
  cronPreviewQuerySchema,
  listSchedulesQuerySchema,
  scheduleBodySchema,
  scheduleIdParamSchema,
  schedulePatchSchema,
} from '../schemas.ts';
import { scopeOf } from '../tenant-scope.ts';
import { toWireSchedule } from '../wire.ts';

export function cronRoutes(baton: Baton, maxJsonDepth: number) {
  /** For a tenant key: 404 SCHEDULE_NOT_FOUND unless the schedule is its tenant's (an admin's request reads nothing). */
  const guard = (c: Parameters<typeof scopeOf>[0], id: string) => scopeOf(c).guard((within) => baton.cron.get(id, within));
  return (
    new Hono<AppEnv>()
      /**
       * `{ schedule, created }`, the shape baton.cron.upsert returns: 201 with the new schedule;
       * 200 with it updated (or unchanged) when (tenantId, name) exists.
       */
      .post(
        '/',
        fails(...CRON, ...BODY, ...ENGINE, ...WRITE, 'FORBIDDEN_TENANT'),
        jsonBody(maxJsonDepth),
        zValidator('json', scheduleBodySchema, validationHook),
        async (c) => {
          const body = c.req.valid('json');
          const r = await baton.cron.upsert({ ...body, tenantId: scopeOf(c).tenant(body.tenantId) });
          return c.json({ schedule: toWireSchedule(r.schedule), created: r.created }, r.created ? 201 : 200);
        },
      )
      .get(
        '/',
        fails(...ENGINE, ...GUARDED, 'FORBIDDEN_TENANT'),
        zValidator('query', listSchedulesQuerySchema, validationHook),
        async (c) => {
          const q = c.req.valid('query');
          const limit = q.limit ?? 100;
          const offset = q.offset ?? 0;
          const tenantId = scopeOf(c).tenant(q.tenantId);
          const schedules = await baton.cron.list({ ...(tenantId ? { tenantId } : {}), limit, offset });
          return c.json({ schedules: schedules.map(toWireSchedule), limit, offset }, 200);
        },
      )
      // Before /:id, which would otherwise take "preview" for an id.
      .get('/preview', fails(...CRON, ...ENGINE, ...GUARDED), zValidator('query', cronPreviewQuerySchema, validationHook), (c) => {
        const q = c.req.valid('query');
        const fires = baton.cron.preview({ cron: q.cron, timezone: q.timezone, count: q.count ?? 10, ...(q.from ? { from: q.from } : {}) });
        return c.json({ cron: q.cron, timezone: q.timezone, fires }, 200);
      })
      .get(
        '/:id',
        fails('SCHEDULE_NOT_FOUND', ...ENGINE, ...GUARDED),
        zValidator('param', scheduleIdParamSchema, validationHook),
        async (c) => {
          const { id } = c.req.valid('param');
          // A tenant key's read is limited to its tenant in the statement: another tenant's schedule is not found.
          const schedule = await baton.cron.get(id, scopeOf(c).within);
          return c.json(toWireSchedule(schedule), 200);
        },
      )
      /** Any subset of the fields; `paused: true` pauses, `paused: false` resumes. 409 SCHEDULE_CONFLICT on a concurrent edit. */
      .patch(
        '/:id',
        fails('SCHEDULE_NOT_FOUND', 'SCHEDULE_CONFLICT', ...CRON, ...BODY, ...ENGINE, ...WRITE),
        jsonBody(maxJsonDepth),
        zValidator('param', scheduleIdParamSchema, validationHook),
        zValidator('json', schedulePatchSchema, validationHook),
        async (c) => {
          const { id } = c.req.valid('param');
          await guard(c, id);
          const s = await baton.cron.update(id, c.req.valid('json'));
          return c.json(toWireSchedule(s), 200);
        },
      )
      .delete(
        '/:id',
        fails('SCHEDULE_NOT_FOUND', ...BODY, ...ENGINE, ...WRITE),
        noBody(),
        zValidator('param', scheduleIdParamSchema, validationHook),
        async (c) => {
          const { id } = c.req.valid('param');
          await guard(c, id);
          await baton.cron.remove(id);
          return c.json({ id, removed: true as const }, 200);
        },
      )
  );
}
