// How a job request is put in its caller's tenant: the spec's tenant and concurrency key space,
// the guard before acting on a job by id, and bulk actions that refuse another tenant's ids as
// not found. A tenant must not tell another tenant's job from an id nobody has.

import type { Context } from 'hono';
import { type Baton, BatonError, type BulkItemResult, type EnqueueOptions, traceCarrier } from '../../index.ts';
import { isJobRef } from '../../types/job.ts';
import type { AppEnv } from '../context.ts';
import { ApiError } from '../errors.ts';
import { type Scope, scopeOf } from '../tenant-scope.ts';

/**
 * How the request's jobs are enqueued. Its W3C trace context (traceparent, tracestate headers) is
 * stored with them, so their attempts' spans continue the caller's trace (an invalid traceparent
 * is ignored, as W3C says). A tenant key's concurrency keys live in its tenant's space
 * (`<tenant>#<key>`): its jobs cannot count against, or exhaust, a cap or rate limit that another
 * tenant's jobs use. An admin's keys are stored as given (fleet-wide, e.g. `vendor:x`).
 */
export function enqueueOptions(c: Context<AppEnv>): EnqueueOptions {
  const trace = traceCarrier(c.req.header('traceparent'), c.req.header('tracestate'));
  return {
    ...(trace ? { traceContext: trace } : {}),
    ...(scopeOf(c).tenantId !== undefined ? { keySpace: 'tenant' as const } : {}),
  };
}

/** A malformed id cannot name a job, so it is simply not found (never a 500 from a cast). `a:123` is a sharded Baton's id. */
export function jobId(raw: string): string {
  if (!isJobRef(raw)) throw new ApiError('JOB_NOT_FOUND', 'job not found');
  return raw;
}

export function jobScope(baton: Baton) {
  /** For a tenant key: 404 JOB_NOT_FOUND unless the job is its tenant's (an admin's request reads nothing). */
  const guard = (scope: Scope, id: string) => scope.guard((within) => baton.admin.getJob(id, within));

  /** bulk with a tenant key: another tenant's ids are refused as not found, the rest go to the engine. */
  async function bulk(scope: Scope, action: Parameters<Baton['admin']['bulk']>[0], ids: string[]): Promise<BulkItemResult[]> {
    if (scope.tenantId === undefined) return baton.admin.bulk(action, ids);
    const refused = new Map<string, BulkItemResult>();
    for (const id of ids) {
      // A malformed id is the engine's to refuse (it names no job, tenant's or not).
      if (!isJobRef(id)) continue;
      try {
        await guard(scope, id);
      } catch (err) {
        if (!(err instanceof BatonError) || err.code !== 'JOB_NOT_FOUND') throw err;
        refused.set(id, { id, ok: false, code: err.code, message: err.message });
      }
    }
    const rest = ids.filter((id) => !refused.has(id));
    const done = rest.length > 0 ? await baton.admin.bulk(action, rest) : [];
    const byId = new Map(done.map((r) => [r.id, r]));
    return ids.map((id) => (refused.get(id) ?? byId.get(id)) as BulkItemResult);
  }

  /**
   * A job as the caller may enqueue it, in the caller's tenant. A tenant key's concurrency keys
   * live in its tenant's space (see enqueueOptions). A job's own concurrencyLimit sets the cap of
   * its key: a tenant key could lift a cap an admin set on its keys with it, so only an admin sets it.
   */
  function spec<T extends { tenantId?: string | undefined; concurrencyLimit?: number | undefined }>(scope: Scope, s: T): T {
    if (scope.tenantId !== undefined && s.concurrencyLimit !== undefined) {
      throw new ApiError('ADMIN_REQUIRED', 'concurrencyLimit needs an admin key: caps on concurrency keys are set by admins');
    }
    return { ...s, tenantId: scope.tenant(s.tenantId) };
  }

  return { guard, bulk, spec };
}
