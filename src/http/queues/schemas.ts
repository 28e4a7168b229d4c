// Queues and stats over HTTP: the zod contracts of their parameters. Query objects are strict:
// an unknown parameter is a 400 naming it.

import { z } from 'zod';
import { STATS_WINDOW_SECONDS_DEFAULT, STATS_WINDOW_SECONDS_MAX } from '../../core/queue-admin.ts';
import { instantParam, intParam, nameSchema } from '../schemas.ts';

export const statsQuerySchema = z
  .object({
    windowSeconds: intParam(1, STATS_WINDOW_SECONDS_MAX, STATS_WINDOW_SECONDS_DEFAULT).optional(),
  })
  .strict();

/** GET /api/stats/history. */
export const statsHistoryQuerySchema = z
  .object({
    since: instantParam('only samples read after this instant (the `at` of the last one the caller has)').optional(),
  })
  .strict();

/** Path parameter of /api/queues/:queue/depth; a name with "/" goes percent-encoded. */
export const queueParamSchema = z.object({
  queue: nameSchema.meta({ description: 'a queue name (percent-encode "/"); an unknown queue has all-zero counts' }),
});
