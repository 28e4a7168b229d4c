// Optional bearer-token guard. Compares SHA-256 digests with timingSafeEqual, so
// neither the token's content nor its length leaks through response timing.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { ApiError } from './errors.ts';
import type { AppEnv } from './context.ts';

/**
 * What the token guards when one is configured (Hono path patterns): the API and the metrics.
 * Everything else (/healthz, /readyz, /openapi.json, the console page) holds no data and stays open.
 */
export const TOKEN_GUARDED_PATHS = ['/api/*', '/metrics'] as const;

/** True when a route's path (/api/jobs/:id) falls under TOKEN_GUARDED_PATHS. */
export function isTokenGuarded(path: string): boolean {
  return TOKEN_GUARDED_PATHS.some((p) => (p.endsWith('/*') ? path.startsWith(p.slice(0, -1)) : path === p));
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** 401 UNAUTHORIZED unless `Authorization: Bearer <token>` matches `token`. */
export function bearerToken(token: string): MiddlewareHandler<AppEnv> {
  if (token.length === 0) throw new Error('bearerToken: the token must not be empty');
  const expected = digest(token);
  return async (c, next) => {
    const header = c.req.header('authorization');
    if (!header) throw new ApiError('UNAUTHORIZED', 'missing bearer token (Authorization: Bearer <token>)');
    const given = BEARER.exec(header)?.[1];
    if (!given || !timingSafeEqual(digest(given), expected)) {
      throw new ApiError('UNAUTHORIZED', 'invalid bearer token');
    }
    await next();
  };
}
