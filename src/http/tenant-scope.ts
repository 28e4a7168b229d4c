// Tenant scoping: THE one place a route learns what its caller may see (src/http/README.md,
// "Tenants"). auth.ts sets the principal; every route that names a tenant or touches a
// tenant's resource goes through scopeOf(c), and the admin-only paths are listed here once.
// Invariant: a tenant key never learns whether another tenant's resource exists (404, the
// same body as for an id nobody has, from a read whose statement is limited to the key's
// tenant, so the two cost the same), and never names another tenant (403).

import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from './context.ts';
import { ApiError } from './errors.ts';

/** Who is calling: an admin (the token, an admin key, or nobody on an open loopback server) or one tenant's key. */
export type Principal =
  | { role: 'admin'; via: 'open' | 'token' | 'key'; keyId: string | null }
  | { role: 'tenant'; tenantId: string; keyId: string };

/**
 * Paths only an admin may use (Hono patterns, as TOKEN_GUARDED_PATHS): fleet-wide state that
 * mixes every tenant (queues and their counts, pause, workers, stats, flow control, metrics) and the keys.
 */
export const ADMIN_ONLY_PATHS = [
  '/api/queues',
  '/api/queues/*',
  '/api/workers',
  '/api/stats',
  '/api/stats/*',
  '/api/keys',
  '/api/keys/*',
  // Flow control: limits and weights are fleet-wide settings, and the snapshot counts every tenant.
  '/api/flow',
  '/api/flow/*',
  '/metrics',
] as const;

/** True when a route's path falls under ADMIN_ONLY_PATHS. */
export function isAdminOnly(path: string): boolean {
  return ADMIN_ONLY_PATHS.some((p) => (p.endsWith('/*') ? path.startsWith(p.slice(0, -1)) : path === p));
}

/** Routes that take a tenantId (body or query), so answer 403 FORBIDDEN_TENANT to a key naming another tenant. */
export const TENANT_NAMING_ROUTES: ReadonlySet<string> = new Set([
  'POST /api/jobs',
  'POST /api/jobs/batch',
  'GET /api/jobs',
  'POST /api/dlq/replay',
  'POST /api/cron',
  'GET /api/cron',
  'GET /api/workflows/runs',
  'POST /api/workflows/:name/runs',
  'GET /api/outbox/stats',
  'GET /api/outbox/messages',
  'GET /api/outbox/messages/:id',
  'POST /api/outbox/messages/:id/replay',
  'POST /api/outbox/dlq/replay',
]);

/** 403 ADMIN_REQUIRED for a tenant key; mounted on ADMIN_ONLY_PATHS by app.ts. */
export function adminOnly(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (scopeOf(c).tenantId !== undefined) throw new ApiError('ADMIN_REQUIRED', 'this route needs an admin key');
    await next();
  };
}

export interface Scope {
  readonly principal: Principal;
  /** The caller's tenant, or undefined for an admin (who sees every tenant). */
  readonly tenantId: string | undefined;
  /**
   * The tenant a write or a listing filter goes to, from the `given` one (a body's or a query's
   * tenantId): an admin's as given; a tenant key's own, whether given or omitted; naming another
   * tenant is 403 FORBIDDEN_TENANT.
   */
  tenant(given: string | undefined): string | undefined;
  /**
   * What a read of one resource by id is limited to: `{ tenantId }` for a tenant key, which the
   * engine puts in the statement's WHERE clause, `{}` for an admin. Another tenant's resource is
   * then not read at all: not found at the cost of an id nobody has (no timing side channel).
   */
  readonly within: { tenantId?: string };
  /**
   * For an action on one resource by id: for a tenant key, first runs `read`, a read limited to
   * the key's tenant that throws the engine's not-found error when it finds nothing (an admin's
   * request reads nothing). Owners never change, so checking before acting is as good as while.
   */
  guard(read: (within: { tenantId: string }) => Promise<unknown>): Promise<void>;
}

export function scopeOf(c: Context<AppEnv>): Scope {
  const principal = c.get('principal');
  // Only reachable for a route outside TOKEN_GUARDED_PATHS: a programming error, never open.
  if (!principal) throw new Error('tenant scope used on a route without authentication');
  const own = principal.role === 'tenant' ? principal.tenantId : undefined;
  return {
    principal,
    tenantId: own,
    tenant(given) {
      if (own === undefined) return given;
      if (given !== undefined && given !== own) throw new ApiError('FORBIDDEN_TENANT', 'this API key may only name its own tenant');
      return own;
    },
    within: own === undefined ? {} : { tenantId: own },
    async guard(read) {
      if (own !== undefined) await read({ tenantId: own });
    },
  };
}
