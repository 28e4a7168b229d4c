// The HTTP API as the OpenAPI document describes it: every resource folder's declarations
// (route-spec.ts), each with what the middleware of app.ts adds in front of its path. A route is
// declared once, so its entry, its router chain and its client types cannot drift apart.

import { PACKAGE_VERSION } from '../version.ts';
import { HOST_CHECK_EXEMPT_PATHS } from './allowed-hosts.ts';
import { isTokenGuarded } from './auth.ts';
import { CRON_API } from './cron/routes.ts';
import type { ApiErrorCode } from './errors.ts';
import { FLOW_API } from './flow-control/routes.ts';
import { JOB_API } from './jobs/routes.ts';
import { KEY_API } from './keys/routes.ts';
import { type JsonObject, type OperationDoc, openApiDocument } from './openapi.ts';
import { OPS_API } from './ops/routes.ts';
import { OUTBOX_API } from './outbox/routes.ts';
import { QUEUE_API } from './queues/routes.ts';
import { NO_BODY_DOC, type ResourceApi, type RouteSpec } from './route-spec.ts';
import { isAdminOnly, TENANT_NAMING_ROUTES } from './tenant-scope.ts';
import { WORKFLOW_API } from './workflows/routes.ts';

/** Every resource of the app, in the document's order of tags and named schemas. */
export const RESOURCES: readonly ResourceApi[] = [JOB_API, QUEUE_API, CRON_API, WORKFLOW_API, KEY_API, FLOW_API, OUTBOX_API, OPS_API];

/** The codes app.ts answers in front of a route: the Host check, admin-only paths, tenant naming, the guards on API writes. */
function edgeCodes(method: RouteSpec['method'], path: string): ApiErrorCode[] {
  const edge: ApiErrorCode[] = [];
  if (!HOST_CHECK_EXEMPT_PATHS.has(path)) edge.push('HOST_NOT_ALLOWED');
  // same-origin.ts and bodyLimit run on every /api/* route; only writes meet them.
  if (method !== 'get' && path.startsWith('/api/')) edge.push('FORBIDDEN_ORIGIN', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE');
  // tenant-scope.ts: a tenant key on an admin path, or naming another tenant.
  if (isAdminOnly(path)) edge.push('ADMIN_REQUIRED');
  if (TENANT_NAMING_ROUTES.has(`${method.toUpperCase()} ${path}`)) edge.push('FORBIDDEN_TENANT');
  return edge;
}

/**
 * A declared route as the document lists it: its own codes in declaration order, then the edge's.
 * The declared codes must be exactly its own plus what app.ts puts in front of its path (and
 * INTERNAL, and UNAUTHORIZED behind the token): a declaration that forgets or invents one throws here.
 */
function operation(spec: RouteSpec): OperationDoc {
  const { body, errors, lenient, ...rest } = spec;
  const bearer = isTokenGuarded(spec.path);
  const edge = edgeCodes(spec.method, spec.path);
  const implied = new Set<ApiErrorCode>([...edge, 'INTERNAL', ...(bearer ? (['UNAUTHORIZED'] as const) : [])]);
  const own = errors.filter((code) => !implied.has(code));
  const expected = new Set<ApiErrorCode>([...own, ...implied]);
  if (expected.size !== new Set(errors).size || errors.some((code) => !expected.has(code))) {
    throw new Error(
      `openapi: ${spec.method.toUpperCase()} ${spec.path} declares ${[...new Set(errors)].sort().join(',')}; its path answers ${[...expected].sort().join(',')}`,
    );
  }
  return {
    ...rest,
    ...lenient,
    ...(body === 'none' ? { body: NO_BODY_DOC } : body ? { body } : {}),
    errors: [...own, ...edge],
    bearer,
  };
}

/**
 * The order of the document's paths: cron's after outbox's, as when the routes were listed by
 * hand, so the served document stayed byte for byte the same when they moved to declarations.
 */
const PATH_ORDER = [...RESOURCES.filter((r) => r !== CRON_API && r !== OPS_API), CRON_API, OPS_API];

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
    tags: RESOURCES.map((r) => r.tag),
    components: Object.assign({}, ...RESOURCES.map((r) => r.components ?? {})),
    requestComponents: Object.assign({}, ...RESOURCES.map((r) => r.requestComponents ?? {})),
    operations: PATH_ORDER.flatMap((r) => r.routes.map(operation)),
    bearer: opts.bearer,
  });
}
