// Named queries for the schedules table. The ticker's writes carry their guards in the
// statement: advance is a compare-and-set on (version, next_fire_at) that only moves forward.

import { statementName } from './statement-name.ts';

const COLUMNS = `id::text, tenant_id, name, cron, timezone, job_type, workflow, queue, payload, priority, max_attempts,
  misfire_policy, catch_up_limit, enabled, disabled_reason, next_fire_at, last_fired_at, version::text,
  created_at, updated_at`;

export function scheduleQueries(schema: string) {
  const s = `${schema}.schedules`;
  return {
    // An update that changes nothing is skipped (no version bump, no row returned; see selectByName).
    // A disabled schedule that is written again is enabled again: its definition was just validated.
    upsert: {
      text: `INSERT INTO ${s} AS s (tenant_id, name, cron, timezone, job_type, queue, payload, priority, max_attempts,
          misfire_policy, catch_up_limit, next_fire_at, workflow)
        VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13)
        ON CONFLICT (tenant_id, name) DO UPDATE SET
          cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, job_type = EXCLUDED.job_type, queue = EXCLUDED.queue,
          workflow = EXCLUDED.workflow,
          payload = EXCLUDED.payload, priority = EXCLUDED.priority, max_attempts = EXCLUDED.max_attempts,
          misfire_policy = EXCLUDED.misfire_policy, catch_up_limit = EXCLUDED.catch_up_limit,
          next_fire_at = CASE WHEN s.enabled AND s.cron = EXCLUDED.cron AND s.timezone = EXCLUDED.timezone
            THEN s.next_fire_at ELSE EXCLUDED.next_fire_at END,
          enabled = s.enabled OR s.disabled_reason IS NOT NULL,
          disabled_reason = NULL,
          version = s.version + 1,
          updated_at = now()
        WHERE (s.cron, s.timezone, s.job_type, s.queue, s.payload, s.priority, s.max_attempts, s.misfire_policy, s.catch_up_limit,
            s.workflow)
            IS DISTINCT FROM (EXCLUDED.cron, EXCLUDED.timezone, EXCLUDED.job_type, EXCLUDED.queue, EXCLUDED.payload,
              EXCLUDED.priority, EXCLUDED.max_attempts, EXCLUDED.misfire_policy, EXCLUDED.catch_up_limit, EXCLUDED.workflow)
          OR s.disabled_reason IS NOT NULL
        RETURNING ${COLUMNS}, (xmax = 0) AS created`,
    },
    selectByName: { text: `SELECT ${COLUMNS} FROM ${s} WHERE tenant_id = $1 AND name = $2` },
    get: { text: `SELECT ${COLUMNS} FROM ${s} WHERE id = $1` },
    // For one tenant: another tenant's schedule is not read at all (docs/security.md).
    getInTenant: { text: `SELECT ${COLUMNS} FROM ${s} WHERE id = $1 AND tenant_id = $2` },
    list: {
      text: `SELECT ${COLUMNS} FROM ${s} WHERE ($1::text IS NULL OR tenant_id = $1)
        ORDER BY tenant_id, name LIMIT $2 OFFSET $3`,
    },
    update: {
      text: `UPDATE ${s} SET cron = $3, timezone = $4, job_type = $5, queue = $6, payload = $7::jsonb, priority = $8,
          max_attempts = $9, misfire_policy = $10, catch_up_limit = $11, next_fire_at = $12, workflow = $13, enabled = $14,
          disabled_reason = NULL, version = version + 1, updated_at = now()
        WHERE id = $1 AND version = $2
        RETURNING ${COLUMNS}`,
    },
    remove: { text: `DELETE FROM ${s} WHERE id = $1` },
    removeExcept: {
      text: `DELETE FROM ${s} WHERE (tenant_id, name) NOT IN (SELECT t, n FROM unnest($1::text[], $2::text[]) AS k(t, n))`,
    },
    due: {
      name: statementName(schema, `schedule_due`),
      text: `SELECT ${COLUMNS} FROM ${s} WHERE enabled AND next_fire_at <= $1 ORDER BY next_fire_at LIMIT $2`,
    },
    earliest: { name: statementName(schema, `schedule_earliest`), text: `SELECT min(next_fire_at) AS at FROM ${s} WHERE enabled` },
    advance: {
      text: `UPDATE ${s} AS s SET next_fire_at = x.next, last_fired_at = COALESCE(x.last_fired, s.last_fired_at)
        FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::timestamptz[], $5::timestamptz[])
          AS x(id, version, expected, next, last_fired)
        WHERE s.id = x.id AND s.version = x.version AND s.enabled
          AND s.next_fire_at = x.expected AND x.next > s.next_fire_at
        RETURNING s.id::text`,
    },
    disable: {
      text: `UPDATE ${s} SET enabled = false, disabled_reason = $3, next_fire_at = NULL, version = version + 1, updated_at = now()
        WHERE id = $1 AND version = $2`,
    },
    notify: { text: 'SELECT pg_notify($1, $2)' },
  };
}
export type ScheduleQueries = ReturnType<typeof scheduleQueries>;
