// /api/workflows, each route declared once (route-spec.ts): start a run of any workflow the registry
// of defined workflows knows, read and list runs, cancel, replay, and send a run an event. Tenant-scoped
// (tenant-scope.ts): another tenant's run is not found, exactly as a run nobody has.

import { type Baton, BatonError, traceCarrier } from '../../index.ts';
import { isJobId } from '../../types/job.ts';
import { ApiError } from '../errors.ts';
import { traceHeadersSchema } from '../jobs/schemas.ts';
import { BODY, ENGINE, GUARDED, WRITE } from '../route-errors.ts';
import { defineRoute, json, type ResourceApi, routes } from '../route-spec.ts';
import { scopeOf } from '../tenant-scope.ts';
import {
  listRunsQuerySchema,
  workflowResponseSchemas as r,
  runEventParamSchema,
  runIdParamSchema,
  sendEventBodySchema,
  startRunBodySchema,
  toWireRun,
  toWireRunSummary,
  wireRunSchema,
  wireRunSummarySchema,
  workflowNameParamSchema,
} from './schemas.ts';

/** The engine's own answer for a run nobody has (workflow/service.ts), so another tenant's looks the same. */
const notFound = (id: string) => () => new BatonError('RUN_NOT_FOUND', `workflow run ${id} not found`, { details: { id } });

/** A malformed id cannot name a run, so it is simply not found. */
function runId(raw: string): string {
  if (!isJobId(raw)) throw new ApiError('RUN_NOT_FOUND', 'workflow run not found');
  return raw;
}

/** cancel, replay, an event: an unknown run, or one whose state refuses it. */
const RUN_ACTION = ['RUN_NOT_FOUND', 'RUN_STATE_CONFLICT', ...BODY, ...ENGINE, ...WRITE] as const;

const startRun = defineRoute({
  method: 'post',
  path: '/api/workflows/:name/runs',
  operationId: 'startWorkflowRun',
  tag: 'workflows',
  summary: 'Start a run of a workflow',
  description:
    "201 with the new run; 200 with the existing one when (tenantId, idempotencyKey) already exists, or when its debounce or throttle folded the start into the key's run or dropped it (`collapsedBy` says which; docs/debounce.md). 404 WORKFLOW_NOT_FOUND when no process ever defined a workflow of that name (the registry of defined workflows); its driving job goes on the queue of the workflow, picked up by whichever worker defines it. A W3C traceparent (and tracestate) header is stored with the run: its executions continue the caller's trace.",
  params: workflowNameParamSchema,
  lenient: { headers: traceHeadersSchema },
  body: { schema: startRunBodySchema, required: true },
  responses: {
    201: json('started', r.started),
    200: json('a run with this idempotency key already exists, or a debounce or throttle collapsed the start', r.started),
  },
  errors: ['WORKFLOW_NOT_FOUND', ...BODY, ...ENGINE, ...WRITE, 'FORBIDDEN_TENANT'],
});

const listRuns = defineRoute({
  method: 'get',
  path: '/api/workflows/runs',
  operationId: 'listWorkflowRuns',
  tag: 'workflows',
  summary: 'List runs, newest first',
  description:
    "Unknown parameters are refused (400). Page by `cursor` (pass the last page's `nextCursor`; every page costs the same however deep), or by offset (the next page starts at offset + runs.length).",
  query: listRunsQuerySchema,
  responses: { 200: json('a page of runs', r.runPage) },
  errors: [...ENGINE, ...GUARDED, 'FORBIDDEN_TENANT'],
});

const getRun = defineRoute({
  method: 'get',
  path: '/api/workflows/runs/:id',
  operationId: 'getWorkflowRun',
  tag: 'workflows',
  summary: 'Read a run: state, input, output, failure chain and every step with its status, attempts, timings and output',
  params: runIdParamSchema,
  responses: { 200: json('the run', wireRunSchema) },
  errors: ['RUN_NOT_FOUND', ...ENGINE, ...GUARDED],
});

const runAction = <const V extends 'cancel' | 'replay'>(verb: V, operationId: string, summary: string, description: string) =>
  defineRoute({
    method: 'post',
    path: `/api/workflows/runs/:id/${verb}`,
    operationId,
    tag: 'workflows',
    summary,
    description,
    params: runIdParamSchema,
    body: 'none',
    responses: { 200: json('the run as the action left it', wireRunSummarySchema) },
    errors: RUN_ACTION,
  });
const cancelRun = runAction('cancel', 'cancelWorkflowRun', 'Cancel a run', '409 unless the run is running, sleeping, waiting or blocked.');
const replayRun = runAction(
  'replay',
  'replayWorkflowRun',
  'Replay (resume) a dead-lettered, cancelled or blocked run',
  'Resumes at the step it stopped at (completed steps keep their outputs), replayCount + 1; 409 otherwise.',
);

const sendEvent = defineRoute({
  method: 'post',
  path: '/api/workflows/runs/:id/events/:name',
  operationId: 'sendWorkflowEvent',
  tag: 'workflows',
  summary: 'Send a run an event',
  description:
    'Kept until a wait for this name takes it (also when the run is not waiting yet). 201 for a new event, 200 when its idempotency key was seen for this run; 409 when the run has succeeded or was cancelled.',
  params: runEventParamSchema,
  body: { schema: sendEventBodySchema, required: true },
  responses: { 201: json('stored', r.event), 200: json('absorbed: the idempotency key was seen', r.event) },
  errors: RUN_ACTION,
});

/** The resource as the OpenAPI document lists it. */
export const WORKFLOW_API = {
  tag: { name: 'workflows', description: 'durable workflow runs: start, read, list, cancel, replay, events' },
  components: { WorkflowRun: wireRunSchema, WorkflowRunSummary: wireRunSummarySchema },
  routes: [startRun, listRuns, getRun, cancelRun, replayRun, sendEvent],
} satisfies ResourceApi;

export function workflowRoutes(baton: Baton, maxJsonDepth: number) {
  /** For a tenant key: 404 RUN_NOT_FOUND unless the run is its tenant's (an admin's request reads nothing). */
  const guard = (c: Parameters<typeof scopeOf>[0], id: string) =>
    scopeOf(c).guard(async (within) => {
      if (!(await baton.workflows.getRun(id, within))) throw notFound(id)();
    });
  return routes({ maxJsonDepth })
    .add(listRuns, async (c) => {
      const q = c.req.valid('query');
      const limit = q.limit ?? 50;
      const offset = q.offset ?? 0;
      const runs = await baton.workflows.listRuns({ ...q, tenantId: scopeOf(c).tenant(q.tenantId), limit, offset });
      const nextCursor = runs.length === limit ? (runs.at(-1)?.id ?? null) : null;
      return c.json({ runs: runs.map(toWireRunSummary), limit, offset, nextCursor }, 200);
    })
    .add(getRun, async (c) => {
      const id = runId(c.req.valid('param').id);
      // A tenant key's read is limited to its tenant in the statements: another tenant's run is not found.
      const run = await baton.workflows.getRun(id, scopeOf(c).within);
      if (!run) throw notFound(id)();
      return c.json(toWireRun(run), 200);
    })
    .add(cancelRun, async (c) => {
      const id = runId(c.req.valid('param').id);
      await guard(c, id);
      return c.json(toWireRunSummary(await baton.workflows.cancelRun(id)), 200);
    })
    .add(replayRun, async (c) => {
      const id = runId(c.req.valid('param').id);
      await guard(c, id);
      return c.json(toWireRunSummary(await baton.workflows.replayRun(id)), 200);
    })
    .add(sendEvent, async (c) => {
      const { id, name } = c.req.valid('param');
      const body = c.req.valid('json');
      const opts = body.idempotencyKey === undefined ? {} : { idempotencyKey: body.idempotencyKey };
      await guard(c, runId(id));
      const r = await baton.sendEvent(id, name, body.payload ?? null, opts);
      return c.json(r, r.duplicate ? 200 : 201);
    })
    .add(startRun, async (c) => {
      const { name } = c.req.valid('param');
      const { input, ...opts } = c.req.valid('json');
      const trace = traceCarrier(c.req.header('traceparent'), c.req.header('tracestate'));
      const r = await baton.startWorkflow(name, input ?? null, {
        ...opts,
        tenantId: scopeOf(c).tenant(opts.tenantId),
        ...(trace ? { traceContext: trace } : {}),
      });
      const collapsed = r.collapsedBy ? { collapsedBy: r.collapsedBy } : {};
      return c.json({ run: toWireRunSummary(r.run), duplicate: r.duplicate, ...collapsed }, r.duplicate || r.collapsedBy ? 200 : 201);
    }).app;
}
