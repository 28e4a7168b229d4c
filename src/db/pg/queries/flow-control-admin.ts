// Flow control's admin statements (migration 0015): limits and weights written whole (a PUT), and
// the snapshot the console and metrics read, whose counts read only the pending and live jobs.

import { keyLimit, LIVE, refill } from './flow-control-fragments.ts';
import { statementName } from './statement-name.ts';

export function flowAdminQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  return {
    // Limits are written whole (a PUT): NULL clears one. A queue row that would hold no limit
    // and no keyed flag is deleted, so the queue's claims go back to the plain statements.
    setQueue: {
      name: statementName(schema, `flow_set_queue`),
      text: `INSERT INTO ${schema}.flow_queues AS f (queue, concurrency_limit, rate_limit, rate_period_ms)
        VALUES ($1, $2, $3, $4)
        ON CONFLICT (queue) DO UPDATE SET concurrency_limit = $2, rate_limit = $3, rate_period_ms = $4,
          tokens = CASE WHEN f.rate_limit IS DISTINCT FROM $3 OR f.rate_period_ms IS DISTINCT FROM $4 THEN NULL ELSE f.tokens END,
          updated_at = now()`,
    },
    // After setQueue: a row left with no limit and not keyed goes (a statement of its own, as a
    // sibling CTE would not see the upserted row).
    dropQueueIfFree: {
      name: statementName(schema, `flow_drop_queue_if_free`),
      text: `DELETE FROM ${schema}.flow_queues
        WHERE queue = $1 AND concurrency_limit IS NULL AND rate_limit IS NULL AND NOT keyed`,
    },
    setKey: {
      name: statementName(schema, `flow_set_key`),
      text: `INSERT INTO ${schema}.flow_keys (pattern, concurrency_limit, rate_limit, rate_period_ms)
        VALUES ($1, $2, $3, $4)
        ON CONFLICT (pattern) DO UPDATE SET concurrency_limit = $2, rate_limit = $3, rate_period_ms = $4, updated_at = now()
        RETURNING pattern`,
    },
    deleteKey: {
      name: statementName(schema, `flow_delete_key`),
      text: `DELETE FROM ${schema}.flow_keys WHERE pattern = $1 RETURNING pattern`,
    },
    setWeight: {
      name: statementName(schema, `flow_set_weight`),
      text: `INSERT INTO ${schema}.tenant_weights (tenant_id, weight) VALUES ($1, $2)
        ON CONFLICT (tenant_id) DO UPDATE SET weight = $2, updated_at = now()`,
    },
    deleteWeight: {
      name: statementName(schema, `flow_delete_weight`),
      text: `DELETE FROM ${schema}.tenant_weights WHERE tenant_id = $1`,
    },
    // The state of flow control, for the console and metrics: queue limits with their running
    // and due counts and tokens now; key patterns; weights; per (queue, tenant) and per key
    // counts of live work (at most $1 groups each: a scan of the pending and live rows).
    snapshotQueues: {
      name: statementName(schema, `flow_snapshot_queues`),
      text: `SELECT f.queue, f.concurrency_limit, f.rate_limit, f.rate_period_ms, f.keyed,
          CASE WHEN f.rate_limit IS NOT NULL THEN ${refill('f.tokens', 'f.refilled_at', 'f.rate_limit', 'f.rate_period_ms')} END AS tokens,
          (SELECT count(*)::int FROM ${jobs} j WHERE j.lease_expires_at IS NOT NULL AND j.state IN ${LIVE} AND j.queue = f.queue) AS running,
          (SELECT count(*)::int FROM ${jobs} j WHERE j.state = 'pending' AND j.queue = f.queue AND j.run_at <= now()) AS due
        FROM ${schema}.flow_queues f ORDER BY f.queue`,
    },
    snapshotKeys: {
      name: statementName(schema, `flow_snapshot_keys`),
      text: `SELECT pattern, concurrency_limit, rate_limit, rate_period_ms FROM ${schema}.flow_keys ORDER BY pattern`,
    },
    snapshotWeights: {
      name: statementName(schema, `flow_snapshot_weights`),
      text: `SELECT tenant_id, weight FROM ${schema}.tenant_weights ORDER BY tenant_id`,
    },
    // The live parts only, each through its partial index (pending: the claim index; leases: the
    // expiry index; a range, not IS NOT NULL, which a plan without statistics takes for nearly
    // every row), so a scrape costs what the live work costs, however long the history: a filter
    // on the state alone left the plan a scan of the whole table.
    snapshotTenants: {
      name: statementName(schema, `flow_snapshot_tenants`),
      text: `SELECT queue, tenant_id, sum(pending)::int AS pending, sum(running)::int AS running FROM (
          SELECT queue, tenant_id, count(*) AS pending, 0 AS running FROM ${jobs} WHERE state = 'pending' GROUP BY queue, tenant_id
          UNION ALL
          SELECT queue, tenant_id, 0, count(*) FROM ${jobs}
          WHERE lease_expires_at > '-infinity' AND state IN ${LIVE} GROUP BY queue, tenant_id) x
        GROUP BY queue, tenant_id ORDER BY queue, tenant_id LIMIT $1`,
    },
    snapshotActiveKeys: {
      name: statementName(schema, `flow_snapshot_active_keys`),
      text: `SELECT a.key, a.pending, a.due, a.running,
          ${keyLimit(schema, 'a.key', 'concurrency_limit', 'concurrency_limit')} AS cap,
          ${keyLimit(schema, 'a.key', 'rate_limit', 'rate_limit')} AS rate,
          (SELECT ${refill('b.tokens', 'b.refilled_at', `${keyLimit(schema, 'a.key', 'rate_limit', 'rate_limit')}`, `${keyLimit(schema, 'a.key', 'rate_limit', 'rate_period_ms')}`)}
             FROM ${schema}.flow_buckets b WHERE b.key = a.key) AS tokens
        FROM (SELECT key, sum(pending)::int AS pending, sum(due)::int AS due, sum(running)::int AS running FROM (
                -- Through jobs_keyed_idx and jobs_keyed_live_idx: keyed jobs that are pending or live.
                SELECT concurrency_key AS key, count(*) AS pending, count(*) FILTER (WHERE run_at <= now()) AS due, 0 AS running
                FROM ${jobs} WHERE state = 'pending' AND concurrency_key IS NOT NULL GROUP BY concurrency_key
                UNION ALL
                SELECT concurrency_key, 0, 0, count(*) FROM ${jobs}
                WHERE state IN ${LIVE} AND concurrency_key IS NOT NULL GROUP BY concurrency_key) k
              GROUP BY key ORDER BY key LIMIT $1) a`,
    },
  } as const;
}
