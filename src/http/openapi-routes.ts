// The HTTP API as the OpenAPI document describes it: one entry per route of app.ts, from
// the resource folders' declarations (route-spec.ts; keys/) or, for the resources not moved
// yet, a table entry with the zod schemas the route validates (schemas.ts) and answers
// (wire-schemas.ts), and the error codes it may answer. test/http/openapi.test.ts checks that every
// route of the app is here, that its codes are those the route declares with fails()
// (route-errors.ts), and that real answers match.

import { PACKAGE_VERSION } from '../version.ts';
import { HOST_CHECK_EXEMPT_PATHS } from './allowed-hosts.ts';
import { isTokenGuarded } from './auth.ts';
import { CRON_API } from './cron/routes.ts';
import type { ApiErrorCode } from './errors.ts';
import { FLOW_API } from './flow/routes.ts';
import { JOB_API } from './jobs/routes.ts';
import { KEY_API } from './keys/routes.ts';
import { type JsonObject, type OperationDoc, openApiDocument } from './openapi.ts';
import { OPS_API } from './ops/routes.ts';
import { OUTBOX_API } from './outbox/routes.ts';
import { QUEUE_API } from './queues/routes.ts';
import { NO_BODY_DOC, type RouteSpec } from './route-spec.ts';
import { isAdminOnly, TENANT_NAMING_ROUTES } from './tenant-scope.ts';
import { wireQueueSchema, wireStatsSchema, wireWorkerSchema } from './wire-schemas.ts';
import { WORKFLOW_API } from './workflows/routes.ts';

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
  ...WORKFLOW_API.routes.map(declared),
  ...KEY_API.routes.map(declared),
  ...FLOW_API.routes.map(declared),
  ...OUTBOX_API.routes.map(declared),
  ...CRON_API.routes.map(declared),
  ...OPS_API.routes.map(declared),
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
    tags: [JOB_API.tag, QUEUE_API.tag, CRON_API.tag, WORKFLOW_API.tag, KEY_API.tag, FLOW_API.tag, OUTBOX_API.tag, OPS_API.tag],
    components: {
      ...JOB_API.components,
      Queue: wireQueueSchema,
      Stats: wireStatsSchema,
      Worker: wireWorkerSchema,
      ...CRON_API.components,
      ...WORKFLOW_API.components,
      ...KEY_API.components,
      ...OUTBOX_API.components,
    },
    requestComponents: { ...JOB_API.requestComponents, ...CRON_API.requestComponents },
    operations: OPERATIONS,
    bearer: opts.bearer,
  });
}
