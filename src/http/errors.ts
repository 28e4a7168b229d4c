// The one place HTTP statuses come from: error code -> status, and the one
// onError / notFound / validation hook. Bodies are { error: { code, message, details? } };
// a 5xx never carries the original message, a stack or SQL text.

import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { core, z } from 'zod';
import { isInvalidInputSqlstate } from '../driver/sqlstate.ts';
import { type ErrorCode, isBatonError } from '../index.ts';
import type { AppEnv } from './context.ts';
import type { errorBodySchema } from './wire-schemas.ts';

/** Codes that only the HTTP edge produces (the engine never throws them). */
export const HTTP_ERROR_CODES = [
  'INVALID_JSON',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'UNAUTHORIZED',
  'FORBIDDEN_ORIGIN',
  'HOST_NOT_ALLOWED',
  'ROUTE_NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'NOT_READY',
  'FORBIDDEN_TENANT',
  'ADMIN_REQUIRED',
  'REQUEST_TIMEOUT',
  'TOO_MANY_CONNECTIONS',
] as const;
export type HttpErrorCode = (typeof HTTP_ERROR_CODES)[number];
/** The `error.code` of an HTTP API error body: an engine ErrorCode or one only the HTTP layer answers (e.g. UNAUTHORIZED). */
export type ApiErrorCode = ErrorCode | HttpErrorCode;

/** THE table. Every error response's status is looked up here and nowhere else. */
export const STATUS_BY_CODE = {
  INVALID_ARGUMENT: 400,
  INVALID_JSON: 400,
  INVALID_CRON_EXPRESSION: 400,
  INVALID_TIMEZONE: 400,
  UNAUTHORIZED: 401,
  // A page on another origin asked to change state (same-origin.ts).
  FORBIDDEN_ORIGIN: 403,
  // Not a name this server is known by, e.g. a DNS-rebound one (allowed-hosts.ts): wrong server.
  HOST_NOT_ALLOWED: 421,
  JOB_NOT_FOUND: 404,
  QUEUE_NOT_FOUND: 404,
  WORKFLOW_NOT_FOUND: 404,
  RUN_NOT_FOUND: 404,
  ROUTE_NOT_FOUND: 404,
  SCHEDULE_NOT_FOUND: 404,
  KEY_PATTERN_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  JOB_STATE_CONFLICT: 409,
  RUN_STATE_CONFLICT: 409,
  LEASE_LOST: 409,
  SCHEDULE_CONFLICT: 409,
  // The request body did not arrive in time, or its client went away while sending it (the
  // daemon's server answers a slow one 408 itself and closes the connection: src/daemon/http-server.ts).
  REQUEST_TIMEOUT: 408,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  // A request cannot produce a config error; if one surfaces it is the server's fault.
  INVALID_CONFIG: 500,
  INTERNAL: 500,
  SHUTTING_DOWN: 503,
  DB_UNAVAILABLE: 503,
  NOT_READY: 503,
  OUTBOX_MESSAGE_NOT_FOUND: 404,
  OUTBOX_STATE_CONFLICT: 409,
  // A tenant key named another tenant in a write or a filter (tenant-scope.ts).
  FORBIDDEN_TENANT: 403,
  // A tenant key on a route only admin keys may use: fleet-wide state, keys (tenant-scope.ts).
  ADMIN_REQUIRED: 403,
  API_KEY_NOT_FOUND: 404,
  // A client address already holds the most connections the daemon allows it (http-server.ts).
  TOO_MANY_CONNECTIONS: 429,
} as const satisfies Record<ApiErrorCode, ContentfulStatusCode>;

/** Wire shape of every error response (its schema: errorBodySchema in wire-schemas.ts). */
export type ApiErrorBody = z.output<typeof errorBodySchema>;

/** An error raised by the HTTP layer itself; carries an ApiErrorCode. */
export class ApiError extends Error {
  readonly code: ApiErrorCode;
  readonly details: unknown;
  constructor(code: ApiErrorCode, message: string, details?: unknown) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.details = details;
  }
}

/** Messages for 5xx: the cause stays in the server log, never in the body. */
const GENERIC_5XX: Partial<Record<ApiErrorCode, string>> = {
  SHUTTING_DOWN: 'the server is shutting down',
  DB_UNAVAILABLE: 'the database is unavailable',
};

export function errorResponse(c: Context, code: ApiErrorCode, message: string, details?: unknown): Response {
  const status = STATUS_BY_CODE[code];
  const body: ApiErrorBody = { error: { code, message } };
  if (details !== undefined) body.error.details = details;
  const headers: Record<string, string> = {};
  if (code === 'UNAUTHORIZED') headers['WWW-Authenticate'] = 'Bearer';
  // The rest of a refused body is still on the wire; a client reusing this connection would
  // race the server closing it, so tell it not to.
  if (code === 'PAYLOAD_TOO_LARGE') headers.Connection = 'close';
  return c.json(body, status, headers);
}

/** HTTP-status -> code for HTTPExceptions raised by hono middleware. */
function codeForHttpStatus(status: number): ApiErrorCode {
  switch (status) {
    case 400:
      return 'INVALID_JSON';
    case 401:
      return 'UNAUTHORIZED';
    case 404:
      return 'ROUTE_NOT_FOUND';
    case 405:
      return 'METHOD_NOT_ALLOWED';
    case 413:
      return 'PAYLOAD_TOO_LARGE';
    case 415:
      return 'UNSUPPORTED_MEDIA_TYPE';
    default:
      return 'INTERNAL';
  }
}

/**
 * A refused-value SQLSTATE (isInvalidInputSqlstate) anywhere in the cause chain means the
 * client's value was refused. The engine already translates these; this is the edge's safety
 * net so they never become 500s, also when something wrapped one as INTERNAL.
 */
function findDataException(err: unknown): string | undefined {
  const seen = new Set<unknown>();
  for (let e = err; e && typeof e === 'object' && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && isInvalidInputSqlstate(code)) return code;
  }
  return undefined;
}

/** app.onError: maps any thrown value to the error body; logs 5xx with their cause. */
export function handleError(err: Error, c: Context<AppEnv>): Response {
  const log = c.get('log');
  if (err instanceof ApiError) return errorResponse(c, err.code, err.message, err.details);
  if (isBatonError(err) && STATUS_BY_CODE[err.code] < 500) return errorResponse(c, err.code, err.message, err.details ?? undefined);
  // Before the 5xx branches: a refused value wrapped as INTERNAL is still the client's fault.
  const sqlstate = findDataException(err);
  if (sqlstate) {
    log?.warn({ err, sqlstate }, 'database refused a value');
    return errorResponse(c, 'INVALID_ARGUMENT', 'a value was rejected by the database', { sqlstate });
  }
  if (isBatonError(err)) {
    log?.error({ err, code: err.code }, 'engine error');
    return errorResponse(c, err.code, GENERIC_5XX[err.code] ?? 'internal error');
  }
  if (err instanceof HTTPException) {
    const code = codeForHttpStatus(err.status);
    if (code === 'INTERNAL') {
      log?.error({ err }, 'unexpected HTTPException');
      return errorResponse(c, 'INTERNAL', 'internal error');
    }
    return errorResponse(c, code, err.message || code.toLowerCase().replaceAll('_', ' '));
  }
  log?.error({ err }, 'unhandled error');
  return errorResponse(c, 'INTERNAL', 'internal error');
}

/** app.notFound. (A path that exists with another method becomes 405 in app.ts.) */
export function handleNotFound(c: Context<AppEnv>): Response {
  return errorResponse(c, 'ROUTE_NOT_FOUND', `no route for ${c.req.method} ${c.req.path.slice(0, 200)}`);
}

export interface FieldIssue {
  /** Dotted path of the field, '' for the whole object. */
  path: string;
  message: string;
}

/** Turns zod issues into field-named details; unknown keys are named in the path. */
export function zodIssues(error: { issues: readonly core.$ZodIssue[] }): FieldIssue[] {
  return error.issues.map((i) => {
    const base = i.path.map(String).join('.');
    if (i.code === 'unrecognized_keys') {
      const keys = i.keys;
      return { path: [base, keys.join(',')].filter(Boolean).join('.'), message: `unknown field(s): ${keys.join(', ')}` };
    }
    return { path: base, message: i.message };
  });
}

/** Validation hook for zValidator: throws INVALID_ARGUMENT naming the first bad field. */
export function validationHook(
  result: ({ success: true } | { success: false; error: { issues: readonly core.$ZodIssue[] } }) & { target: string },
): void {
  if (result.success) return;
  const issues = zodIssues(result.error);
  const first = issues[0];
  const where = first?.path ? `${first.path}: ` : '';
  const target = result.target === 'json' ? 'body' : result.target;
  throw new ApiError('INVALID_ARGUMENT', `invalid ${target}: ${where}${first?.message ?? 'invalid input'}`, { issues });
}
