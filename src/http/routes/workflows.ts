// /api/workflows: start a run of a workflow this process defines, read and list runs,
// cancel, replay, and send a run an event. Engine errors map to statuses in errors.ts
// (404 WORKFLOW_NOT_FOUND / RUN_NOT_FOUND, 409 RUN_STATE_CONFLICT). Tenant-scoped
// (tenant-scope.ts): another tenant's run is not found.

import { zValidator } from '@hono/zod-validator';
import { Hono } from 'hono';
import { isJobId } from '../../core/admin.ts';
import { type Baton, BatonError } from '../../index.ts';
import type { AppEnv } from '../context.ts';
import { ApiError, validationHook } from '../errors.ts';
import { jsonBody, noBody } from '../json-body.ts';
import { BODY, ENGINE, fails, GUARDED, WRITE } from '../route-errors.ts';
import { scopeOf } from '../tenant-scope.ts';
import {
  listRunsQuerySchema,
  runEventParamSchema,
  runIdParamSchema,
  sendEventBodySchema,
  startRunBodySchema,
  toWireRun,
  toWireRunSummary,
  workflowNameParamSchema,
} from '../workflow-schemas.ts';

/** The engine's own answer for a run nobody has (workflow/service.ts), so another tenant's looks the same. */
const notFound = (id: string) => () => new BatonError('RUN_NOT_FOUND', `workflow run ${id} not found`, { details: { id } });

/** A malformed id cannot name a run, so it is simply not found. */
function runId(raw: string): string {
  if (!isJobId(raw)) throw new ApiError('RUN_NOT_FOUND', 'workflow run not found');
  return raw;
}

/** cancel, replay, an event: an unknown run, or one whose state refuses it. */
const RUN_ACTION = ['RUN_NOT_FOUND', 'RUN_STATE_CONFLICT', ...BODY, ...ENGINE, ...WRITE] as const;

export function workflowRoutes(baton: Baton, maxJsonDepth: number) {
  /** For a tenant key: 404 RUN_NOT_FOUND unless the run is its tenant's (an admin's request reads nothing). */
  const guard = (c: Parameters<typeof scopeOf>[0], id: string) =>
    scopeOf(c).guard(async (within) => {
      if (!(await baton.workflows.getRun(id, within))) throw notFound(id)();
    });
  return (
    new Hono<AppEnv>()
      /** Runs, newest first, by name / state / tenantId, paged by limit and offset. */
      .get(
        '/runs',
        fails(...ENGINE, ...GUARDED, 'FORBIDDEN_TENANT'),
        zValidator('query', listRunsQuerySchema, validationHook),
        async (c) => {
          const q = c.req.valid('query');
          const limit = q.limit ?? 50;
          const offset = q.offset ?? 0;
          const runs = await baton.workflows.listRuns({ ...q, tenantId: scopeOf(c).tenant(q.tenantId), limit, offset });
          return c.json({ runs: runs.map(toWireRunSummary), limit, offset }, 200);
        },
      )
      .get('/runs/:id', fails('RUN_NOT_FOUND', ...ENGINE, ...GUARDED), zValidator('param', runIdParamSchema, validationHook), async (c) => {
        const id = runId(c.req.valid('param').id);
        // A tenant key's read is limited to its tenant in the statements: another tenant's run is not found.
        const run = await baton.workflows.getRun(id, scopeOf(c).within);
        if (!run) throw notFound(id)();
        return c.json(toWireRun(run), 200);
      })
      /** Running, sleeping or waiting runs only (409 otherwise). */
      .post('/runs/:id/cancel', fails(...RUN_ACTION), noBody(), zValidator('param', runIdParamSchema, validationHook), async (c) => {
        const id = runId(c.req.valid('param').id);
        await guard(c, id);
        const run = await baton.workflows.cancelRun(id);
        return c.json(toWireRunSummary(run), 200);
      })
      /** Dead-lettered or cancelled runs only (409 otherwise): resumes where it stopped. */
      .post('/runs/:id/replay', fails(...RUN_ACTION), noBody(), zValidator('param', runIdParamSchema, validationHook), async (c) => {
        const id = runId(c.req.valid('param').id);
        await guard(c, id);
        const run = await baton.workflows.replayRun(id);
        return c.json(toWireRunSummary(run), 200);
      })
      /** 201 for a new event, 200 when its idempotency key was seen for this run. */
      .post(
        '/runs/:id/events/:name',
        fails(...RUN_ACTION),
        jsonBody(maxJsonDepth),
        zValidator('param', runEventParamSchema, validationHook),
        zValidator('json', sendEventBodySchema, validationHook),
        async (c) => {
          const { id, name } = c.req.valid('param');
          const body = c.req.valid('json');
          const opts = body.idempotencyKey === undefined ? {} : { idempotencyKey: body.idempotencyKey };
          await guard(c, runId(id));
          const r = await baton.sendEvent(id, name, body.payload ?? null, opts);
          return c.json(r, r.duplicate ? 200 : 201);
        },
      )
      /** 201 with the new run; 200 with the existing one when (tenantId, idempotencyKey) already exists. */
      .post(
        '/:name/runs',
        fails('WORKFLOW_NOT_FOUND', ...BODY, ...ENGINE, ...WRITE, 'FORBIDDEN_TENANT'),
        jsonBody(maxJsonDepth),
        zValidator('param', workflowNameParamSchema, validationHook),
        zValidator('json', startRunBodySchema, validationHook),
        async (c) => {
          const { name } = c.req.valid('param');
          const { input, ...opts } = c.req.valid('json');
          const r = await baton.startWorkflow(name, input ?? null, { ...opts, tenantId: scopeOf(c).tenant(opts.tenantId) });
          return c.json({ run: toWireRunSummary(r.run), duplicate: r.duplicate }, r.duplicate ? 200 : 201);
        },
      )
  );
}
