// Named queries for paused queues. A queue is known when it has a job, a live worker serves
// it, or it is paused; pausing or resuming an unknown one answers no row (a typo stays a 404).

import { statementName } from './statement-name.ts';

export function queueQueries(schema: string) {
  const paused = `${schema}.paused_queues`;
  const known = `(EXISTS (SELECT 1 FROM ${schema}.jobs WHERE queue = $1)
      OR EXISTS (SELECT 1 FROM ${schema}.workers WHERE gone_since IS NULL AND queues ? $1)
      OR EXISTS (SELECT 1 FROM ${paused} WHERE queue = $1))`;
  return {
    // Idempotent: pausing a paused queue keeps its first paused_at.
    pause: {
      name: statementName(schema, `queue_pause`),
      text: `WITH ins AS (
          INSERT INTO ${paused} (queue) SELECT $1 WHERE ${known}
          ON CONFLICT (queue) DO NOTHING RETURNING paused_at
        )
        SELECT COALESCE((SELECT paused_at FROM ins), (SELECT paused_at FROM ${paused} WHERE queue = $1)) AS paused_at
        WHERE ${known}`,
    },
    // One row when the queue is known: paused_at of the row deleted, or NULL if it was not paused.
    resume: {
      name: statementName(schema, `queue_resume`),
      text: `WITH del AS (DELETE FROM ${paused} WHERE queue = $1 RETURNING paused_at)
        SELECT (SELECT paused_at FROM del) AS paused_at WHERE ${known}`,
    },
    listPaused: {
      name: statementName(schema, `queue_list_paused`),
      text: `SELECT queue, paused_at FROM ${paused} ORDER BY queue`,
    },
  } as const;
}

export type QueueQueries = ReturnType<typeof queueQueries>;
