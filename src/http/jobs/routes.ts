// /api/jobs and the dead-letter replay (/api/dlq/replay), each route declared once (route-spec.ts):
// enqueue (one or a batch), read, list, replay, cancel, run now, bulk. Every route is tenant-scoped
// (tenant-scope.ts, scope.ts here): another tenant's job is not found.

import { DLQ_REPLAY_LIMIT_DEFAULT } from '../../core/admin.ts';
import { cursorAfter } from '../../core/sharding/merged-listing.ts';
import type { Baton } from '../../index.ts';
import { pagesByCursor } from '../../types/job-sort.ts';
import { BODY, ENGINE, GUARDED, WRITE } from '../route-errors.ts';
import { defineRoute, json, type ResourceApi, routes } from '../route-spec.ts';
import { scopeOf } from '../tenant-scope.ts';
import { collapsed, toWireBulkItem, toWireJob, toWireResult, wireSummaries } from '../wire.ts';
import {
  responseSchemas as r,
  wireAttemptErrorSchema,
  wireEnqueuedJobSchema,
  wireEnqueueWarningSchema,
  wireJobSchema,
  wireJobSummarySchema,
  wireStateCountsSchema,
} from '../wire-schemas.ts';
import {
  batchSchema,
  bulkSchema,
  dlqReplayQuerySchema,
  jobIdParamSchema,
  jobSpecSchema,
  listJobsQuerySchema,
  traceHeadersSchema,
} from './schemas.ts';
import { enqueueOptions, jobId, jobScope } from './scope.ts';

/** An enqueue's refusals: ADMIN_REQUIRED for a tenant key setting concurrencyLimit (a key's cap is fleet-wide). */
const ENQUEUE = [...BODY, ...ENGINE, ...WRITE, 'ADMIN_REQUIRED', 'FORBIDDEN_TENANT'] as const;

const enqueue = defineRoute({
  method: 'post',
  path: '/api/jobs',
  operationId: 'enqueueJob',
  tag: 'jobs',
  summary: 'Enqueue a job',
  description:
    "201 with the new job; 200 with the existing one when (tenantId, idempotencyKey) already exists, or when its debounce or throttle folded the enqueue into the key's job or dropped it (`collapsedBy` says which; docs/debounce.md). `warnings` says when no live worker can run it yet (it is stored all the same).",
  lenient: { headers: traceHeadersSchema },
  body: { schema: jobSpecSchema, required: true },
  responses: {
    201: json('created', wireEnqueuedJobSchema),
    200: json('a job with this idempotency key already exists, or a debounce or throttle collapsed the enqueue', wireEnqueuedJobSchema),
  },
  errors: ENQUEUE,
});

const enqueueBatch = defineRoute({
  method: 'post',
  path: '/api/jobs/batch',
  operationId: 'enqueueJobs',
  tag: 'jobs',
  summary: 'Enqueue jobs in one INSERT',
  description:
    'All or nothing, unless a spec carries debounce or throttle: its plain specs are one INSERT, each windowed spec its own transaction (docs/debounce.md). Results in input order.',
  lenient: { headers: traceHeadersSchema },
  body: { schema: batchSchema, required: true },
  responses: { 201: json('at least one job was created', r.batch), 200: json('every job already existed', r.batch) },
  errors: ENQUEUE,
});

const listJobs = defineRoute({
  method: 'get',
  path: '/api/jobs',
  operationId: 'listJobs',
  tag: 'jobs',
  summary: 'List job summaries, newest first',
  description:
    "Unknown parameters are refused (400). Page by `cursor` (pass the last page's `nextCursor`; every page costs the same however deep), or by offset (the next page starts at offset + jobs.length). `total` is capped.",
  query: listJobsQuerySchema,
  responses: { 200: json('a page of summaries', r.jobPage) },
  errors: [...ENGINE, ...GUARDED, 'FORBIDDEN_TENANT'],
});

const getJob = defineRoute({
  method: 'get',
  path: '/api/jobs/:id',
  operationId: 'getJob',
  tag: 'jobs',
  summary: 'Read a job, with its payload, result and attempts',
  params: jobIdParamSchema,
  responses: { 200: json('the job', wireJobSchema) },
  errors: ['JOB_NOT_FOUND', ...ENGINE, ...GUARDED],
});

/** POST /api/jobs/:id/<action>: no body; the job as the action left it, or 409 from a state it does not apply to. */
const jobAction = <const A extends string, const R extends Record<number, ReturnType<typeof json>>>(
  action: A,
  doc: { operationId: string; summary: string; description: string },
  responses: R,
) =>
  defineRoute({
    method: 'post',
    path: `/api/jobs/:id/${action}`,
    tag: 'jobs',
    ...doc,
    params: jobIdParamSchema,
    body: 'none',
    responses,
    errors: ['JOB_NOT_FOUND', 'JOB_STATE_CONFLICT', ...BODY, ...ENGINE, ...WRITE],
  });

const replay = jobAction(
  'replay',
  {
    operationId: 'replayJob',
    summary: 'Replay a terminal job',
    description: 'Back to pending with a fresh attempt budget, replayCount + 1; 409 unless the job is terminal.',
  },
  { 200: json('the job, pending again', wireJobSchema) },
);

const cancel = jobAction(
  'cancel',
  {
    operationId: 'cancelJob',
    summary: 'Cancel a job, or ask a running one to stop',
    description:
      "A pending or waiting job is cancelled at once (200), with its dependents. A leased or running job gets a cancel request (202): its handler's signal is aborted at once (NOTIFY) or at its worker's next heartbeat; it ends cancelled if the handler stops (its attempt fails) or nothing holds it any more, succeeded if the handler finishes anyway, and is never retried. Repeating the request changes nothing. 409 when the job is finished.",
  },
  {
    200: json('the cancelled job', wireJobSchema),
    202: json('the job as it stands, running (or leased), with cancelRequestedAt set', wireJobSchema),
  },
);

const runNow = jobAction(
  'run-now',
  {
    operationId: 'runJobNow',
    summary: 'Run a pending (e.g. delayed) job now',
    description: 'Its run_at becomes now (a job already due keeps its place) and workers are woken; 409 unless the job is pending.',
  },
  { 200: json('the job, due now', wireJobSchema) },
);

const bulk = defineRoute({
  method: 'post',
  path: '/api/jobs/bulk',
  operationId: 'bulkJobs',
  tag: 'jobs',
  summary: 'Replay, cancel or run now a selection of jobs',
  description:
    'Each id is done or refused on its own, with the refusal the single-job route would answer (JOB_NOT_FOUND, JOB_STATE_CONFLICT); every id gets its outcome, in input order. 200 whatever the outcomes.',
  body: { schema: bulkSchema, required: true },
  responses: { 200: json('per-id outcomes', r.bulk) },
  errors: [...BODY, ...ENGINE, ...WRITE],
});

const replayDeadLetters = defineRoute({
  method: 'post',
  path: '/api/dlq/replay',
  operationId: 'replayDeadLetters',
  tag: 'jobs',
  summary: 'Replay dead-lettered jobs, oldest first',
  description: 'Unknown parameters are refused (400).',
  query: dlqReplayQuerySchema,
  body: 'none',
  responses: { 200: json('the replayed jobs, as summaries', r.dlqReplay) },
  errors: [...BODY, ...ENGINE, ...WRITE, 'FORBIDDEN_TENANT'],
});

/** The resource as the OpenAPI document lists it; its answers' schemas are shared with queues and workflows (wire-schemas.ts). */
export const JOB_API = {
  tag: { name: 'jobs', description: 'enqueue, read, list, replay, cancel, run now, bulk actions' },
  components: {
    Job: wireJobSchema,
    EnqueuedJob: wireEnqueuedJobSchema,
    JobSummary: wireJobSummarySchema,
    AttemptError: wireAttemptErrorSchema,
    EnqueueWarning: wireEnqueueWarningSchema,
    StateCounts: wireStateCountsSchema,
  },
  requestComponents: { JobSpec: jobSpecSchema },
  routes: [enqueue, enqueueBatch, listJobs, getJob, replay, cancel, runNow, bulk, replayDeadLetters],
} satisfies ResourceApi;

export function jobRoutes(baton: Baton, maxJsonDepth: number) {
  const scoped = jobScope(baton);
  return (
    routes({ maxJsonDepth })
      .add(enqueue, async (c) => {
        const r = await baton.enqueue(scoped.spec(scopeOf(c), c.req.valid('json')), enqueueOptions(c));
        return c.json({ ...toWireJob(r.job), warnings: r.warnings, ...collapsed(r) }, r.created ? 201 : 200);
      })
      /** One INSERT for the batch (and a transaction per windowed spec); results in input order. 201 if any job was created, else 200. */
      .add(enqueueBatch, async (c) => {
        const scope = scopeOf(c);
        const specs = c.req.valid('json').jobs.map((spec) => scoped.spec(scope, spec));
        const results = await baton.enqueueMany(specs, enqueueOptions(c));
        return c.json({ results: results.map(toWireResult) }, results.some((r) => r.created) ? 201 : 200);
      })
      /** replay, cancel or runNow on 1..100 distinct ids, one at a time: each is done or refused on its own. */
      .add(bulk, async (c) => {
        const { action, ids } = c.req.valid('json');
        const results = (await scoped.bulk(scopeOf(c), action, ids)).map(toWireBulkItem);
        const done = results.filter((r) => r.ok).length;
        return c.json({ action, done, refused: results.length - done, results }, 200);
      })
      /**
       * Summaries, newest first; `truncated` when the response size cap cut the page short (the next
       * page starts after its last job: nextCursor, or offset + jobs.length); `windowed` when a sort
       * other than id/createdAt, or `due` without state=pending, sorted only the newest
       * JOB_SORT_WINDOW matching jobs.
       */
      .add(listJobs, async (c) => {
        const q = c.req.valid('query');
        const filter = { ...q, tenantId: scopeOf(c).tenant(q.tenantId) };
        const page = await baton.admin.listJobs(filter);
        const { jobs, truncated } = wireSummaries(page.jobs);
        // A page cut short goes on right after its last job (each cluster's, over several), when the listing pages by cursor at all.
        const nextCursor =
          truncated && pagesByCursor(filter)
            ? cursorAfter(
                q.cursor,
                jobs.map((j) => j.id),
              )
            : page.nextCursor;
        return c.json(
          { jobs, total: page.total, limit: page.limit, offset: page.offset, nextCursor, truncated, windowed: page.windowed },
          200,
        );
      })
      .add(getJob, async (c) => {
        const id = jobId(c.req.valid('param').id);
        // A tenant key's read is limited to its tenant in the statement: another tenant's job is not found.
        const job = await baton.admin.getJob(id, scopeOf(c).within);
        return c.json(toWireJob(job), 200);
      })
      .add(replay, async (c) => {
        const id = jobId(c.req.valid('param').id);
        await scoped.guard(scopeOf(c), id);
        return c.json(toWireJob(await baton.admin.replay(id)), 200);
      })
      .add(runNow, async (c) => {
        const id = jobId(c.req.valid('param').id);
        await scoped.guard(scopeOf(c), id);
        return c.json(toWireJob(await baton.admin.runNow(id)), 200);
      })
      // A leased or running job gets a cancel request (202, the job as it stands); it ends with the outcome its handler reaches.
      .add(cancel, async (c) => {
        const id = jobId(c.req.valid('param').id);
        await scoped.guard(scopeOf(c), id);
        const job = await baton.admin.cancel(id);
        if (job.state === 'cancelled') return c.json(toWireJob(job), 200);
        return c.json(toWireJob(job), 202);
      })
      /** Replays up to `limit` dead-lettered jobs, oldest first; answers their summaries (capped like a listing). */
      .add(replayDeadLetters, async (c) => {
        const q = c.req.valid('query');
        const tenantId = scopeOf(c).tenant(q.tenantId);
        const replayed = await baton.admin.replayDeadLetters({ ...q, tenantId, limit: q.limit ?? DLQ_REPLAY_LIMIT_DEFAULT });
        const { jobs, truncated } = wireSummaries(replayed);
        return c.json({ replayed: replayed.length, jobs, truncated }, 200);
      }).app
  );
}
