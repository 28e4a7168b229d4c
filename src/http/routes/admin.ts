// Operator routes: bulk dead-letter replay (capped), queues with counts by state and
// pause state, pause/resume, live workers, the console's stats snapshot. Queues are
// implicit: an unknown queue has all-zero counts, and cannot be paused (404). Queues, workers
// and stats mix every tenant: admin only (ADMIN_ONLY_PATHS); the DLQ replay is tenant-scoped.

import { zValidator } from '@hono/zod-validator';
import { Hono } from 'hono';
import { DLQ_REPLAY_LIMIT_DEFAULT } from '../../core/admin.ts';
import type { Baton } from '../../index.ts';
import type { AppEnv } from '../context.ts';
import { validationHook } from '../errors.ts';
import { noBody } from '../json-body.ts';
import { BODY, ENGINE, fails, GUARDED, WRITE } from '../route-errors.ts';
import { dlqReplayQuerySchema, queueParamSchema, statsHistoryQuerySchema, statsQuerySchema } from '../schemas.ts';
import type { StatsHistory } from '../stats-history.ts';
import { scopeOf } from '../tenant-scope.ts';
import { toWireCounts, toWireQueue, toWireQueueState, toWireStats, toWireStatsHistory, toWireWorker, wireSummaries } from '../wire.ts';

/** Queues, workers and stats mix every tenant: a tenant key gets 403 ADMIN_REQUIRED. */
const ADMIN_READ = [...ENGINE, ...GUARDED, 'ADMIN_REQUIRED'] as const;
/** pause, resume: 404 for a queue with no job, no live worker serving it, and not paused. */
const QUEUE_ACTION = ['QUEUE_NOT_FOUND', ...BODY, ...ENGINE, ...WRITE, 'ADMIN_REQUIRED'] as const;

export function dlqRoutes(baton: Baton) {
  /** Replays up to `limit` (default 100, max 1000) dead-lettered jobs, oldest first; answers their summaries (capped like a listing). */
  return new Hono<AppEnv>().post(
    '/replay',
    fails(...BODY, ...ENGINE, ...WRITE, 'FORBIDDEN_TENANT'),
    noBody(),
    zValidator('query', dlqReplayQuerySchema, validationHook),
    async (c) => {
      const q = c.req.valid('query');
      const tenantId = scopeOf(c).tenant(q.tenantId);
      const replayed = await baton.admin.replayDeadLetters({ ...q, tenantId, limit: q.limit ?? DLQ_REPLAY_LIMIT_DEFAULT });
      const { jobs, truncated } = wireSummaries(replayed);
      return c.json({ replayed: replayed.length, jobs, truncated }, 200);
    },
  );
}

export function queueRoutes(baton: Baton) {
  return (
    new Hono<AppEnv>()
      .get('/', fails(...ADMIN_READ), async (c) => {
        const queues = await baton.admin.queues();
        return c.json({ queues: queues.map(toWireQueue) }, 200);
      })
      .get('/:queue/depth', fails(...ADMIN_READ), zValidator('param', queueParamSchema, validationHook), async (c) => {
        const { queue } = c.req.valid('param');
        return c.json({ queue, counts: toWireCounts(await baton.admin.queueDepth(queue)) }, 200);
      })
      /** Every worker process stops claiming the queue (idempotent); 404 for a queue with no job, no live worker, not paused. */
      .post('/:queue/pause', fails(...QUEUE_ACTION), noBody(), zValidator('param', queueParamSchema, validationHook), async (c) => {
        const state = await baton.admin.pauseQueue(c.req.valid('param').queue);
        c.get('log').info({ queue: state.queue }, 'queue paused');
        return c.json(toWireQueueState(state), 200);
      })
      .post('/:queue/resume', fails(...QUEUE_ACTION), noBody(), zValidator('param', queueParamSchema, validationHook), async (c) => {
        const state = await baton.admin.resumeQueue(c.req.valid('param').queue);
        c.get('log').info({ queue: state.queue }, 'queue resumed');
        return c.json(toWireQueueState(state), 200);
      })
  );
}

export function statsRoutes(baton: Baton, history: StatsHistory) {
  return (
    new Hono<AppEnv>()
      /** Counts by queue and state, paused queues and the last window's finished jobs, from one statement. */
      .get('/', fails(...ADMIN_READ), zValidator('query', statsQuerySchema, validationHook), async (c) => {
        history.touch();
        return c.json(toWireStats(await baton.admin.stats(c.req.valid('query'))), 200);
      })
      /** The chart history this process keeps (stats-history.ts), oldest first; `since` for only the newer ones. */
      .get('/history', fails(...ADMIN_READ), zValidator('query', statsHistoryQuerySchema, validationHook), (c) => {
        history.touch();
        return c.json(toWireStatsHistory(history, history.samples(c.req.valid('query').since)), 200);
      })
  );
}

export function workerRoutes(baton: Baton) {
  return new Hono<AppEnv>().get('/', fails(...ADMIN_READ), async (c) => {
    const workers = await baton.admin.workers();
    return c.json({ workers: workers.map(toWireWorker) }, 200);
  });
}
