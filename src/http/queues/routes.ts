// Queues, workers and the console's stats (/api/queues, /api/workers, /api/stats), each route
// declared once (route-spec.ts). They mix every tenant, so they are admin only (ADMIN_ONLY_PATHS).
// Queues are implicit: an unknown queue has all-zero counts, and cannot be paused (404).

import type { Baton } from '../../index.ts';
import { BODY, ENGINE, GUARDED, WRITE } from '../route-errors.ts';
import { defineRoute, json, type ResourceApi, routes } from '../route-spec.ts';
import type { StatsHistory } from '../stats-history.ts';
import { toWireCounts, toWireQueue, toWireQueueState, toWireStats, toWireStatsHistory, toWireWorker } from '../wire.ts';
import { responseSchemas as r, wireQueueSchema, wireStatsSchema, wireWorkerSchema } from '../wire-schemas.ts';
import { queueParamSchema, statsHistoryQuerySchema, statsQuerySchema } from './schemas.ts';

/** A tenant key gets 403 ADMIN_REQUIRED. */
const ADMIN_READ = [...ENGINE, ...GUARDED, 'ADMIN_REQUIRED'] as const;

const listQueues = defineRoute({
  method: 'get',
  path: '/api/queues',
  operationId: 'listQueues',
  tag: 'queues',
  summary: 'Every queue with at least one job or paused, with counts by state and pause state',
  responses: { 200: json('the queues', r.queues) },
  errors: ADMIN_READ,
});

/** pause, resume: idempotent; 404 for a queue with no job, no live worker serving it, and not paused. */
const queueAction = <const A extends 'pause' | 'resume'>(action: A) =>
  defineRoute({
    method: 'post',
    path: `/api/queues/:queue/${action}`,
    operationId: `${action}Queue`,
    tag: 'queues',
    summary: action === 'pause' ? 'Pause a queue: no worker process claims from it' : 'Resume a paused queue',
    description:
      action === 'pause'
        ? "Fleet-wide, from each worker's next claim; jobs already claimed run on, enqueues are accepted. Idempotent. 404 QUEUE_NOT_FOUND for a queue with no job, no live worker, and not paused."
        : 'Workers are woken. Idempotent. 404 QUEUE_NOT_FOUND as for pause.',
    params: queueParamSchema,
    body: 'none',
    responses: { 200: json("the queue's pause state", r.queueState) },
    errors: ['QUEUE_NOT_FOUND', ...BODY, ...ENGINE, ...WRITE, 'ADMIN_REQUIRED'],
  });
const pauseQueue = queueAction('pause');
const resumeQueue = queueAction('resume');

const stats = defineRoute({
  method: 'get',
  path: '/api/stats',
  operationId: 'stats',
  tag: 'queues',
  summary: 'Counts by queue and state, pause state and the last window of finished jobs, read in one statement',
  description: 'What the console polls for its panels and charts. Unknown parameters are refused (400).',
  query: statsQuerySchema,
  responses: { 200: json('the snapshot', r.stats) },
  errors: ADMIN_READ,
});

const statsHistory = defineRoute({
  method: 'get',
  path: '/api/stats/history',
  operationId: 'statsHistory',
  tag: 'queues',
  summary: "The console's chart history: samples of the stats this process took in the last minutes",
  description:
    'Kept in memory by each process, oldest first, up to 15 minutes at one sample every 2 s. Sampling starts with the first read of /api/stats or this route and stops after 30 minutes without one. `since` returns only newer samples.',
  query: statsHistoryQuerySchema,
  responses: { 200: json('the samples', r.statsHistory) },
  errors: ADMIN_READ,
});

const queueDepth = defineRoute({
  method: 'get',
  path: '/api/queues/:queue/depth',
  operationId: 'queueDepth',
  tag: 'queues',
  summary: "A queue's job counts by state",
  params: queueParamSchema,
  responses: { 200: json('the counts', r.depth) },
  errors: ADMIN_READ,
});

const listWorkers = defineRoute({
  method: 'get',
  path: '/api/workers',
  operationId: 'listWorkers',
  tag: 'queues',
  summary: 'Workers seen recently, live or not',
  responses: { 200: json('the workers', r.workers) },
  errors: ADMIN_READ,
});

/** The resource as the OpenAPI document lists it (its answers' schemas are in wire-schemas.ts, with the jobs' they use). */
export const QUEUE_API = {
  tag: { name: 'queues', description: 'queues, pause and resume, workers, stats and their history' },
  components: { Queue: wireQueueSchema, Stats: wireStatsSchema, Worker: wireWorkerSchema },
  routes: [listQueues, pauseQueue, resumeQueue, stats, statsHistory, queueDepth, listWorkers],
} satisfies ResourceApi;

export function queueRoutes(baton: Baton, history: StatsHistory) {
  return routes()
    .add(listQueues, async (c) => {
      const queues = await baton.admin.queues();
      return c.json({ queues: queues.map(toWireQueue) }, 200);
    })
    .add(queueDepth, async (c) => {
      const { queue } = c.req.valid('param');
      return c.json({ queue, counts: toWireCounts(await baton.admin.queueDepth(queue)) }, 200);
    })
    .add(pauseQueue, async (c) => {
      const state = await baton.admin.pauseQueue(c.req.valid('param').queue);
      c.get('log').info({ queue: state.queue }, 'queue paused');
      return c.json(toWireQueueState(state), 200);
    })
    .add(resumeQueue, async (c) => {
      const state = await baton.admin.resumeQueue(c.req.valid('param').queue);
      c.get('log').info({ queue: state.queue }, 'queue resumed');
      return c.json(toWireQueueState(state), 200);
    })
    .add(listWorkers, async (c) => {
      const workers = await baton.admin.workers();
      return c.json({ workers: workers.map(toWireWorker) }, 200);
    })
    .add(stats, async (c) => {
      // Reading the stats is what keeps the chart history sampling (stats-history.ts).
      history.touch();
      return c.json(toWireStats(await baton.admin.stats(c.req.valid('query'))), 200);
    })
    .add(statsHistory, (c) => {
      history.touch();
      return c.json(toWireStatsHistory(history, history.samples(c.req.valid('query').since)), 200);
    }).app;
}
