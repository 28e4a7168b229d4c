// Which errors a route may answer, declared on the route: `fails(...codes)` is a middleware
// that does nothing at run time, but its type carries each code's status (STATUS_BY_CODE)
// into the route's response type, so the typed client knows them (`res.status === 401`
// compiles and narrows the body to ApiErrorBody). routes().add (route-spec.ts) puts it first on each
// route, with the codes of the route's declaration, which the OpenAPI document lists too.

import type { MiddlewareHandler, TypedResponse } from 'hono';
import type { BlankInput } from 'hono/types';
import type { AppEnv } from './context.ts';
import type { ApiErrorBody, ApiErrorCode, STATUS_BY_CODE } from './errors.ts';

/** What any route that reads or writes jobs may meet in the engine or the database. */
export const ENGINE = ['INVALID_ARGUMENT', 'INVALID_CONFIG', 'DB_UNAVAILABLE', 'SHUTTING_DOWN'] as const;
/** A checked JSON body (json-body.ts), or a body that must be empty or {}. */
export const BODY = ['INVALID_JSON', 'INVALID_ARGUMENT'] as const;
/** What a cron expression and zone may be refused with. */
export const CRON = ['INVALID_CRON_EXPRESSION', 'INVALID_TIMEZONE'] as const;
/** Any route: an unexpected failure (500, a generic message). */
export const ANY = ['INTERNAL'] as const;
/** A route behind the Host check and the token (app.ts): an unknown Host (421), no or a bad credential (401). */
export const GUARDED = ['HOST_NOT_ALLOWED', 'UNAUTHORIZED', ...ANY] as const;
/** A state-changing /api request also meets the same-origin check and the body limit (app.ts). */
export const WRITE = [...GUARDED, 'FORBIDDEN_ORIGIN', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE'] as const;

/** One error answer per code, as the client types it: the error body with that code's status. */
export type ErrorResponse<C extends ApiErrorCode> = C extends ApiErrorCode
  ? TypedResponse<ApiErrorBody, (typeof STATUS_BY_CODE)[C], 'json'>
  : never;

/** The middleware `fails` makes: its response type is the routes' error answers, `codes` lists them. */
export type Fails<C extends ApiErrorCode> = MiddlewareHandler<AppEnv, string, BlankInput, ErrorResponse<C>> & {
  readonly codes: readonly C[];
};

/**
 * Declares the codes a route may answer besides its successes (errors thrown anywhere in the
 * request reach errors.ts, which is what answers them). Put it first among the route's handlers.
 */
export function fails<const C extends readonly ApiErrorCode[]>(...codes: C): Fails<C[number]> {
  const declare: MiddlewareHandler<AppEnv> = async (_c, next) => {
    await next();
  };
  return Object.assign(declare, { codes: [...new Set(codes)] }) as Fails<C[number]>;
}
