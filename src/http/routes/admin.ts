// The bulk dead-letter replay (capped, tenant-scoped), a jobs operation: it moves with the
// jobs resource into a folder of its own (queues, workers and stats are in http/queues/).

import { zValidator } from '@hono/zod-validator';
import { Hono } from 'hono';
import { DLQ_REPLAY_LIMIT_DEFAULT } from '../../core/admin.ts';
import type { Baton } from '../../index.ts';
import type { AppEnv } from '../context.ts';
import { validationHook } from '../errors.ts';
import { noBody } from '../json-body.ts';
import { BODY, ENGINE, fails, WRITE } from '../route-errors.ts';
import { dlqReplayQuerySchema } from '../schemas.ts';
import { scopeOf } from '../tenant-scope.ts';
import { wireSummaries } from '../wire.ts';

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
