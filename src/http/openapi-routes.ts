// The HTTP API as the OpenAPI document describes it: one entry per route of app.ts, from
// the resource folders' declarations (route-spec.ts; keys/) or, for the resources not moved
// yet, a table entry with the zod schemas the route validates (schemas.ts) and answers
// (wire-schemas.ts), and the error codes it may answer. test/http/openapi.test.ts checks that every
// route of the app is here, that its codes are those the route declares with fails()
// (route-errors.ts), and that real answers match.

import { PACKAGE_VERSION } from '../version.ts';
import { HOST_CHECK_EXEMPT_PATHS } from './allowed-hosts.ts';
import { isTokenGuarded } from './auth.ts';
import type { ApiErrorCode } from './errors.ts';
import { JOB_API } from './jobs/routes.ts';
import { KEY_API } from './keys/routes.ts';
import { type JsonObject, type OperationDoc, openApiDocument } from './openapi.ts';
import { FLOW_TAG, flowOperations } from './openapi-flow.ts';
import { OPS_TAG, opsOperations } from './openapi-ops.ts';
import { OUTBOX_COMPONENTS, OUTBOX_TAG, outboxOperations } from './openapi-outbox.ts';
import { WORKFLOW_COMPONENTS, WORKFLOW_TAG, workflowOperations } from './openapi-workflows.ts';
import { QUEUE_API } from './queues/routes.ts';
import { BODY, CRON, ENGINE } from './route-errors.ts';
import { json, NO_BODY_DOC, type RouteSpec } from './route-spec.ts';
import {
  cronPreviewQuerySchema,
  listSchedulesQuerySchema,
  scheduleBodySchema,
  scheduleIdParamSchema,
  schedulePatchSchema,
} from './schemas.ts';
import { isAdminOnly, TENANT_NAMING_ROUTES } from './tenant-scope.ts';
import {
  responseSchemas as r,
  wireFireInstantSchema,
  wireQueueSchema,
  wireScheduleSchema,
  wireStatsSchema,
  wireWorkerSchema,
} from './wire-schemas.ts';

const noBody = NO_BODY_DOC;

/** A route, with what the middleware of app.ts adds: the Host check, the token, the guards on API writes. */
function route(o: Omit<OperationDoc, 'bearer'>): OperationDoc {
  const edge: ApiErrorCode[] = [];
  if (!HOST_CHECK_EXEMPT_PATHS.has(o.path)) edge.push('HOST_NOT_ALLOWED');
  // same-origin.ts and bodyLimit run on every /api/* route; only writes meet them.
  if (o.method !== 'get' && o.path.startsWith('/api/')) edge.push('FORBIDDEN_ORIGIN', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE');
  // tenant-scope.ts: a tenant key on an admin path, or naming another tenant.
  if (isAdminOnly(o.path)) edge.push('ADMIN_REQUIRED');
  if (TENANT_NAMING_ROUTES.has(`${o.method.toUpperCase()} ${o.path}`)) edge.push('FORBIDDEN_TENANT');
  return { ...o, errors: [...o.errors, ...edge], bearer: isTokenGuarded(o.path) };
}

/**
 * A declared route (route-spec.ts) as the document lists it. Its codes come in the table's order
 * (its own, then the edge's, added by `route`), and must be exactly what app.ts puts in front of
 * its path besides its own: a declaration that forgets or invents an edge code throws here.
 */
function declared(spec: RouteSpec): OperationDoc {
  const { body, errors, lenient, ...rest } = spec;
  const probe = route({ ...rest, errors: [] });
  const edge = new Set<ApiErrorCode>([...probe.errors, 'INTERNAL', ...(probe.bearer ? (['UNAUTHORIZED'] as const) : [])]);
  const op = route({
    ...rest,
    ...lenient,
    ...(body === 'none' ? { body: noBody } : body ? { body } : {}),
    errors: errors.filter((code) => !edge.has(code)),
  });
  const expected = new Set<ApiErrorCode>([...op.errors, ...edge]);
  if (expected.size !== new Set(errors).size || errors.some((code) => !expected.has(code))) {
    throw new Error(
      `openapi: ${spec.method.toUpperCase()} ${spec.path} declares ${[...new Set(errors)].sort().join(',')}; its path answers ${[...expected].sort().join(',')}`,
    );
  }
  return op;
}

const OPERATIONS: readonly OperationDoc[] = [
  ...JOB_API.routes.map(declared),
  ...QUEUE_API.routes.map(declared),
  ...workflowOperations({ route, json, noBody, BODY, ENGINE }),
  ...KEY_API.routes.map(declared),
  ...flowOperations({ route, json, noBody, BODY, ENGINE }),
  ...outboxOperations({ route, json, noBody, BODY, ENGINE }),
  route({
    method: 'post',
    path: '/api/cron',
    operationId: 'upsertSchedule',
    tag: 'cron',
    summary: 'Create a schedule, or update it by (tenantId, name)',
    description:
      'Answers `{ schedule, created }`, as baton.cron.upsert returns. Each occurrence becomes an ordinary job (idempotency key cron:<id>:<instant>, run_at the occurrence). An update that keeps the expression and zone keeps the next fire time.',
    body: { schema: scheduleBodySchema, required: true },
    responses: { 201: json('created', r.scheduleUpserted), 200: json('updated, or unchanged', r.scheduleUpserted) },
    errors: [...CRON, ...BODY, ...ENGINE],
  }),
  route({
    method: 'get',
    path: '/api/cron',
    operationId: 'listSchedules',
    tag: 'cron',
    summary: 'List schedules by tenant and name',
    query: listSchedulesQuerySchema,
    responses: { 200: json('a page of schedules', r.schedules) },
    errors: ENGINE,
  }),
  route({
    method: 'get',
    path: '/api/cron/preview',
    operationId: 'previewCron',
    tag: 'cron',
    summary: "An expression's next fire instants in a zone, in UTC and local time",
    query: cronPreviewQuerySchema,
    responses: { 200: json('the next fire instants', r.cronPreview) },
    errors: [...CRON, ...ENGINE],
  }),
  route({
    method: 'get',
    path: '/api/cron/:id',
    operationId: 'getSchedule',
    tag: 'cron',
    summary: 'Read a schedule: next fire time, last fired occurrence, status and disabled reason',
    params: scheduleIdParamSchema,
    responses: { 200: json('the schedule', wireScheduleSchema) },
    errors: ['SCHEDULE_NOT_FOUND', ...ENGINE],
  }),
  route({
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
    errors: ['SCHEDULE_NOT_FOUND', 'SCHEDULE_CONFLICT', ...CRON, ...BODY, ...ENGINE],
  }),
  route({
    method: 'delete',
    path: '/api/cron/:id',
    operationId: 'removeSchedule',
    tag: 'cron',
    summary: 'Remove a schedule (jobs already enqueued stay)',
    params: scheduleIdParamSchema,
    body: noBody,
    responses: { 200: json('removed', r.scheduleRemoved) },
    errors: ['SCHEDULE_NOT_FOUND', ...BODY, ...ENGINE],
  }),
  ...opsOperations({ route, json, noBody, BODY, ENGINE }),
];

/**
 * The OpenAPI 3.1 document of the app. `bearer`: whether the server requires a token (then the
 * guarded routes carry the bearerAuth security scheme and 401 answers).
 */
export function apiDocument(opts: { bearer: boolean }): JsonObject {
  return openApiDocument({
    info: {
      title: 'Baton HTTP API',
      version: PACKAGE_VERSION,
      description:
        'Errors are `{ error: { code, message, details? } }`; the status comes from the code. Every POST is JSON-typed, also without a body. A method a path does not serve answers 405 METHOD_NOT_ALLOWED with `Allow`.',
    },
    tags: [
      JOB_API.tag,
      QUEUE_API.tag,
      { name: 'cron', description: 'schedules: recurring jobs from cron expressions in IANA zones' },
      WORKFLOW_TAG,
      KEY_API.tag,
      FLOW_TAG,
      OUTBOX_TAG,
      OPS_TAG,
    ],
    components: {
      ...JOB_API.components,
      Queue: wireQueueSchema,
      Stats: wireStatsSchema,
      Worker: wireWorkerSchema,
      Schedule: wireScheduleSchema,
      FireInstant: wireFireInstantSchema,
      ...WORKFLOW_COMPONENTS,
      ...KEY_API.components,
      ...OUTBOX_COMPONENTS,
    },
    requestComponents: { ...JOB_API.requestComponents, ScheduleSpec: scheduleBodySchema },
    operations: OPERATIONS,
    bearer: opts.bearer,
  });
}
