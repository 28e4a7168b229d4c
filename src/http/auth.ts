// Authentication: who is calling. Sets the request's principal (tenant-scope.ts) from
// `Authorization: Bearer <credential>`: the admin token (apiToken, compared as SHA-256 digests
// with timingSafeEqual, so neither content nor length leaks through timing) or an API key
// (src/core/api-keys.ts). With no credential configured at all the API is open, as an admin;
// the daemon allows that only on a loopback address (docs/security.md).

import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { ApiKeys } from '../index.ts';
import type { AppEnv } from './context.ts';
import { ApiError } from './errors.ts';
import type { Principal } from './tenant-scope.ts';

/**
 * What needs a credential when one is configured (Hono path patterns): the API and the metrics.
 * Everything else (/healthz, /readyz, /openapi.json, the console page) holds no data and stays open.
 */
export const TOKEN_GUARDED_PATHS = ['/api/*', '/metrics'] as const;

/** True when a route's path (/api/jobs/:id) falls under TOKEN_GUARDED_PATHS. */
export function isTokenGuarded(path: string): boolean {
  return TOKEN_GUARDED_PATHS.some((p) => (p.endsWith('/*') ? path.startsWith(p.slice(0, -1)) : path === p));
}

/** Why a request was refused 401 (the label of baton_auth_failures_total); the caller sees only 401. */
export const AUTH_FAILURE_REASONS = ['missing', 'malformed', 'bad_token', 'unknown_key', 'bad_secret', 'revoked'] as const;
export type AuthFailureReason = (typeof AUTH_FAILURE_REASONS)[number];

export interface AuthOptions {
  /** The admin bootstrap token (BATON_API_TOKEN). */
  apiToken?: string | undefined;
  /** API keys; while none is active (and no apiToken), the API is open. */
  apiKeys?: ApiKeys | undefined;
  /** Never open: a request without a credential is 401 even when no key exists (a non-loopback bind). */
  requireAuth?: boolean | undefined;
  onFailure?: (reason: AuthFailureReason) => void;
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** Sets `principal`, or answers 401 UNAUTHORIZED (counted by reason through onFailure). */
export function authenticate(opts: AuthOptions): MiddlewareHandler<AppEnv> {
  if (opts.apiToken !== undefined && opts.apiToken.length === 0) throw new Error('authenticate: the token must not be empty');
  const expected = opts.apiToken === undefined ? undefined : digest(opts.apiToken);
  const refuse = (reason: AuthFailureReason, message: string): never => {
    opts.onFailure?.(reason);
    throw new ApiError('UNAUTHORIZED', message);
  };
  /** Open while nothing could authenticate anyone: no token, no active key, and allowed to be. */
  const open = async (): Promise<boolean> =>
    !opts.requireAuth && expected === undefined && !(opts.apiKeys && (await opts.apiKeys.anyActive()));

  async function principalFor(header: string | undefined): Promise<Principal> {
    if (header === undefined) {
      if (await open()) return { role: 'admin', via: 'open', keyId: null };
      return refuse('missing', 'missing bearer token (Authorization: Bearer <token or API key>)');
    }
    const given = BEARER.exec(header)?.[1];
    if (!given) return refuse('malformed', 'invalid Authorization header: expected Bearer <token or API key>');
    if (expected && timingSafeEqual(digest(given), expected)) return { role: 'admin', via: 'token', keyId: null };
    // An API key has its own shape; anything else could only have been the admin token.
    if (opts.apiKeys && /^bk_/.test(given)) {
      const r = await opts.apiKeys.verify(given);
      if (!r.ok) return refuse(r.reason, 'invalid API key');
      if (r.key.role === 'admin') return { role: 'admin', via: 'key', keyId: r.key.id };
      // The table's constraint binds every tenant key to a tenant; never widen one that is not.
      if (r.key.tenantId === null) return refuse('unknown_key', 'invalid API key');
      return { role: 'tenant', tenantId: r.key.tenantId, keyId: r.key.id };
    }
    // A wrong credential is an error even while the API is open: never silently ignored.
    return refuse('bad_token', 'invalid bearer token');
  }

  return async (c, next) => {
    c.set('principal', await principalFor(c.req.header('authorization')));
    await next();
  };
}
