// /api/jobs: enqueue (one or a batch), read, list, replay, cancel, run now, bulk. Bodies go
// through jsonBody (strict JSON) then zod; engine errors map to statuses in errors.ts.

import { Hono } from 'hono';
import { zValidator } from '@hono/zod-validator';
import type { Baton } from '../../index.ts';
import type { AppEnv } from '../context.ts';
import { ApiError, validationHook } from '../errors.ts';
import { jsonBody, noBody } from '../json-body.ts';
import { isJobId, traceCarrier, type EnqueueOptions } from '../../index.ts';
import { batchSchema, bulkSchema, jobIdParamSchema, jobSpecSchema, listJobsQuerySchema } from '../schemas.ts';
import { toWireBulkItem, toWireJob, toWireResult, wireSummaries } from '../wire.ts';

/**
 * The request's W3C trace context (traceparent, tracestate headers) to store with the jobs, so
 * their attempts' spans continue the caller's trace. An invalid traceparent is ignored (W3C).
 */
function tracedBy(c: { req: { header(name: string): string | undefined } }): EnqueueOptions {
  const trace = traceCarrier(c.req.header('traceparent'), c.req.header('tracestate'));
  return trace ? { traceContext: trace } : {};
}

/** A malformed id cannot name a job, so it is simply not found (never a 500 from a cast). */
function jobId(raw: string): string {
  if (!isJobId(raw)) throw new ApiError('JOB_NOT_FOUND', 'job not found');
  return raw;
}

export function jobRoutes(baton: Baton, maxJsonDepth: number) {
  return (
    new Hono<AppEnv>()
      /**
       * 201 with the new job; 200 with the existing one when (tenantId, idempotencyKey) already
       * exists. `warnings` says when no live worker can run it yet (it is stored all the same).
       */
      .post('/', jsonBody(maxJsonDepth), zValidator('json', jobSpecSchema, validationHook), async (c) => {
        const r = await baton.enqueue(c.req.valid('json'), tracedBy(c));
        return c.json({ ...toWireJob(r.job), warnings: r.warnings }, r.created ? 201 : 200);
      })
      /** One INSERT for the batch; results in input order. 201 if any job was created, else 200. */
      .post('/batch', jsonBody(maxJsonDepth), zValidator('json', batchSchema, validationHook), async (c) => {
        const results = await baton.enqueueMany(c.req.valid('json').jobs, tracedBy(c));
        return c.json({ results: results.map(toWireResult) }, results.some((r) => r.created) ? 201 : 200);
      })
      /**
       * replay, cancel or runNow on 1..100 distinct ids, one at a time: each is done or refused on
       * its own (404, 409 as the single-job routes), and every id gets its outcome, in input order.
       */
      .post('/bulk', jsonBody(maxJsonDepth), zValidator('json', bulkSchema, validationHook), async (c) => {
        const { action, ids } = c.req.valid('json');
        const results = (await baton.admin.bulk(action, ids)).map(toWireBulkItem);
        const done = results.filter((r) => r.ok).length;
        return c.json({ action, done, refused: results.length - done, results }, 200);
      })
      /**
       * Summaries, newest first, filtered by state / tenantId / queue / jobType, paged by limit
       * (1..500) and offset; `truncated` when the response size cap cut the page short (the next
       * page starts at offset + jobs.length). The full job is GET /api/jobs/:id.
       */
      .get('/', zValidator('query', listJobsQuerySchema, validationHook), async (c) => {
        const page = await baton.admin.listJobs(c.req.valid('query'));
        const { jobs, truncated } = wireSummaries(page.jobs);
        return c.json({ jobs, total: page.total, limit: page.limit, offset: page.offset, truncated }, 200);
      })
      .get('/:id', zValidator('param', jobIdParamSchema, validationHook), async (c) => {
        const job = await baton.admin.getJob(jobId(c.req.valid('param').id));
        return c.json(toWireJob(job), 200);
      })
      /** Terminal jobs only (409 otherwise): back to pending with a fresh budget, replayCount + 1. */
      .post('/:id/replay', noBody(), zValidator('param', jobIdParamSchema, validationHook), async (c) => {
        const job = await baton.admin.replay(jobId(c.req.valid('param').id));
        return c.json(toWireJob(job), 200);
      })
      /** Pending jobs only (409 otherwise): due now (a delayed job's run_at becomes now), workers woken. */
      .post('/:id/run-now', noBody(), zValidator('param', jobIdParamSchema, validationHook), async (c) => {
        const job = await baton.admin.runNow(jobId(c.req.valid('param').id));
        return c.json(toWireJob(job), 200);
      })
      /** Pending jobs only (409 otherwise). */
      .post('/:id/cancel', noBody(), zValidator('param', jobIdParamSchema, validationHook), async (c) => {
        const job = await baton.admin.cancel(jobId(c.req.valid('param').id));
        return c.json(toWireJob(job), 200);
      })
  );
}
