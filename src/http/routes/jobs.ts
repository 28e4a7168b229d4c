// /api/jobs: enqueue (one or a batch), read, list, replay, cancel, run now, bulk. Bodies go
// through jsonBody (strict JSON) then zod; engine errors map to statuses in errors.ts. Every
// route is tenant-scoped (tenant-scope.ts): another tenant's job is not found.

import { zValidator } from '@hono/zod-validator';
import { Hono } from 'hono';
import { isJobId } from '../../core/admin.ts';
import type { Baton } from '../../index.ts';
import { BatonError, type BulkItemResult, type EnqueueOptions, traceCarrier } from '../../index.ts';
import type { AppEnv } from '../context.ts';
import { ApiError, validationHook } from '../errors.ts';
import { jsonBody, noBody } from '../json-body.ts';
import { BODY, ENGINE, fails, GUARDED, WRITE } from '../route-errors.ts';
import { batchSchema, bulkSchema, jobIdParamSchema, jobSpecSchema, listJobsQuerySchema } from '../schemas.ts';
import { type Scope, scopeOf } from '../tenant-scope.ts';
import { toWireBulkItem, toWireJob, toWireResult, wireSummaries } from '../wire.ts';

/**
 * How the request's jobs are enqueued. Its W3C trace context (traceparent, tracestate headers) is
 * stored with them, so their attempts' spans continue the caller's trace (an invalid traceparent
 * is ignored, as W3C says). A tenant key's concurrency keys live in its tenant's space
 * (`<tenant>#<key>`): its jobs cannot count against, or exhaust, a cap or rate limit that another
 * tenant's jobs use. An admin's keys are stored as given (fleet-wide, e.g. `vendor:x`).
 */
function enqueueOptions(c: Parameters<typeof scopeOf>[0]): EnqueueOptions {
  const trace = traceCarrier(c.req.header('traceparent'), c.req.header('tracestate'));
  return {
    ...(trace ? { traceContext: trace } : {}),
    ...(scopeOf(c).tenantId !== undefined ? { keySpace: 'tenant' as const } : {}),
  };
}

/** A malformed id cannot name a job, so it is simply not found (never a 500 from a cast). */
function jobId(raw: string): string {
  if (!isJobId(raw)) throw new ApiError('JOB_NOT_FOUND', 'job not found');
  return raw;
}

/** An enqueue's refusals: ADMIN_REQUIRED for a tenant key setting concurrencyLimit (scopedSpec). */
const ENQUEUE = [...BODY, ...ENGINE, ...WRITE, 'ADMIN_REQUIRED', 'FORBIDDEN_TENANT'] as const;
/** replay, run-now, cancel: an unknown job, or a state the action does not apply to. */
const JOB_ACTION = ['JOB_NOT_FOUND', 'JOB_STATE_CONFLICT', ...BODY, ...ENGINE, ...WRITE] as const;

export function jobRoutes(baton: Baton, maxJsonDepth: number) {
  /** For a tenant key: 404 JOB_NOT_FOUND unless the job is its tenant's (an admin's request reads nothing). */
  const guard = (scope: Scope, id: string) => scope.guard((within) => baton.admin.getJob(id, within));

  /** bulk with a tenant key: another tenant's ids are refused as not found, the rest go to the engine. */
  async function scopedBulk(scope: Scope, action: Parameters<Baton['admin']['bulk']>[0], ids: string[]): Promise<BulkItemResult[]> {
    if (scope.tenantId === undefined) return baton.admin.bulk(action, ids);
    const refused = new Map<string, BulkItemResult>();
    for (const id of ids) {
      // A malformed id is the engine's to refuse (it names no job, tenant's or not).
      if (!isJobId(id)) continue;
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
  function scopedSpec<T extends { tenantId?: string | undefined; concurrencyLimit?: number | undefined }>(scope: Scope, spec: T): T {
    if (scope.tenantId !== undefined && spec.concurrencyLimit !== undefined) {
      throw new ApiError('ADMIN_REQUIRED', 'concurrencyLimit needs an admin key: caps on concurrency keys are set by admins');
    }
    return { ...spec, tenantId: scope.tenant(spec.tenantId) };
  }

  return (
    new Hono<AppEnv>()
      /**
       * 201 with the new job; 200 with the existing one when (tenantId, idempotencyKey) already
       * exists. `warnings` says when no live worker can run it yet (it is stored all the same).
       */
      .post('/', fails(...ENQUEUE), jsonBody(maxJsonDepth), zValidator('json', jobSpecSchema, validationHook), async (c) => {
        const spec = c.req.valid('json');
        const r = await baton.enqueue(scopedSpec(scopeOf(c), spec), enqueueOptions(c));
        return c.json({ ...toWireJob(r.job), warnings: r.warnings }, r.created ? 201 : 200);
      })
      /** One INSERT for the batch; results in input order. 201 if any job was created, else 200. */
      .post('/batch', fails(...ENQUEUE), jsonBody(maxJsonDepth), zValidator('json', batchSchema, validationHook), async (c) => {
        const scope = scopeOf(c);
        const specs = c.req.valid('json').jobs.map((spec) => scopedSpec(scope, spec));
        const results = await baton.enqueueMany(specs, enqueueOptions(c));
        return c.json({ results: results.map(toWireResult) }, results.some((r) => r.created) ? 201 : 200);
      })
      /**
       * replay, cancel or runNow on 1..100 distinct ids, one at a time: each is done or refused on
       * its own (404, 409 as the single-job routes), and every id gets its outcome, in input order.
       */
      .post(
        '/bulk',
        fails(...BODY, ...ENGINE, ...WRITE),
        jsonBody(maxJsonDepth),
        zValidator('json', bulkSchema, validationHook),
        async (c) => {
          const { action, ids } = c.req.valid('json');
          const results = (await scopedBulk(scopeOf(c), action, ids)).map(toWireBulkItem);
          const done = results.filter((r) => r.ok).length;
          return c.json({ action, done, refused: results.length - done, results }, 200);
        },
      )
      /**
       * Summaries, newest first, filtered by state / tenantId / queue / jobType, paged by limit
       * (1..500) and offset; `truncated` when the response size cap cut the page short (the next
       * page starts at offset + jobs.length); `windowed` when a sort other than id/createdAt, or
       * `due` without state=pending, sorted only the newest JOB_SORT_WINDOW matching jobs. The
       * full job is GET /api/jobs/:id.
       */
      .get('/', fails(...ENGINE, ...GUARDED, 'FORBIDDEN_TENANT'), zValidator('query', listJobsQuerySchema, validationHook), async (c) => {
        const q = c.req.valid('query');
        const page = await baton.admin.listJobs({ ...q, tenantId: scopeOf(c).tenant(q.tenantId) });
        const { jobs, truncated } = wireSummaries(page.jobs);
        return c.json({ jobs, total: page.total, limit: page.limit, offset: page.offset, truncated, windowed: page.windowed }, 200);
      })
      .get('/:id', fails('JOB_NOT_FOUND', ...ENGINE, ...GUARDED), zValidator('param', jobIdParamSchema, validationHook), async (c) => {
        const id = jobId(c.req.valid('param').id);
        // A tenant key's read is limited to its tenant in the statement: another tenant's job is not found.
        const job = await baton.admin.getJob(id, scopeOf(c).within);
        return c.json(toWireJob(job), 200);
      })
      /** Terminal jobs only (409 otherwise): back to pending with a fresh budget, replayCount + 1. */
      .post('/:id/replay', fails(...JOB_ACTION), noBody(), zValidator('param', jobIdParamSchema, validationHook), async (c) => {
        const id = jobId(c.req.valid('param').id);
        await guard(scopeOf(c), id);
        const job = await baton.admin.replay(id);
        return c.json(toWireJob(job), 200);
      })
      /** Pending jobs only (409 otherwise): due now (a delayed job's run_at becomes now), workers woken. */
      .post('/:id/run-now', fails(...JOB_ACTION), noBody(), zValidator('param', jobIdParamSchema, validationHook), async (c) => {
        const id = jobId(c.req.valid('param').id);
        await guard(scopeOf(c), id);
        const job = await baton.admin.runNow(id);
        return c.json(toWireJob(job), 200);
      })
      /**
       * A pending or waiting job: cancelled now (200; a waiting job's own dependents with it). A
       * leased or running one: a cancel request is recorded and its handler signalled (202, the
       * job as it stands); it ends cancelled or with the outcome its handler reached. 409 when finished.
       */
      .post('/:id/cancel', fails(...JOB_ACTION), noBody(), zValidator('param', jobIdParamSchema, validationHook), async (c) => {
        const id = jobId(c.req.valid('param').id);
        await guard(scopeOf(c), id);
        const job = await baton.admin.cancel(id);
        if (job.state === 'cancelled') return c.json(toWireJob(job), 200);
        return c.json(toWireJob(job), 202);
      })
  );
}
