// Named queries for the health of the database as Baton sees it: how long due jobs have
// waited, the size and vacuum state of Baton's tables, and the server's oldest transaction
// horizon. Each reads live work or the catalogs, never the history of finished jobs.

import { statementName } from './statement-name.ts';

export function healthQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  return {
    // Due pending jobs through the claim index (its rows are the pending ones): what waits now.
    oldestDue: {
      name: statementName(schema, `health_oldest_due`),
      text: `SELECT queue, extract(epoch FROM now() - min(run_at))::float8 AS seconds, count(*)::int AS due
        FROM ${jobs} WHERE state = 'pending' AND run_at <= now() GROUP BY queue`,
    },
    // Size and vacuum state of the schema's tables; $1 is the schema name as the catalogs spell it.
    tables: {
      name: statementName(schema, `health_tables`),
      text: `SELECT s.relname AS name, pg_total_relation_size(s.relid)::float8 AS total_bytes,
          pg_relation_size(s.relid)::float8 AS table_bytes, pg_indexes_size(s.relid)::float8 AS index_bytes,
          s.n_live_tup::float8 AS live_tuples, s.n_dead_tup::float8 AS dead_tuples,
          extract(epoch FROM greatest(s.last_autovacuum, s.last_vacuum))::float8 AS last_vacuum_epoch,
          extract(epoch FROM greatest(s.last_autoanalyze, s.last_analyze))::float8 AS last_analyze_epoch
        FROM pg_stat_user_tables s WHERE s.schemaname = $1 ORDER BY s.relname`,
    },
    // The oldest transaction horizon anywhere on the server (any database, prepared
    // transactions and replication slots too): while it stays old, no dead row newer than it
    // can be pruned or vacuumed in Baton's tables, whatever autovacuum does.
    horizon: {
      name: statementName(schema, `health_horizon`),
      text: `SELECT
          (SELECT max(age(backend_xmin)) FROM pg_stat_activity WHERE backend_xmin IS NOT NULL)::float8 AS session_xmin_age,
          (SELECT extract(epoch FROM now() - min(xact_start)) FROM pg_stat_activity
            WHERE xact_start IS NOT NULL AND backend_type = 'client backend' AND pid <> pg_backend_pid())::float8 AS oldest_xact_seconds,
          (SELECT max(age(transaction)) FROM pg_prepared_xacts)::float8 AS prepared_xmin_age,
          (SELECT max(greatest(age(xmin), age(catalog_xmin))) FROM pg_replication_slots)::float8 AS slot_xmin_age`,
    },
    // Dead row versions of jobs since its last vacuum (the statistics' count, a little behind),
    // and whether a vacuum of it runs now (autovacuum's or anyone's).
    jobsDead: {
      name: statementName(schema, `health_jobs_dead`),
      text: `SELECT COALESCE((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = '${jobs}'::regclass), 0)::float8 AS dead,
          EXISTS (SELECT 1 FROM pg_stat_progress_vacuum WHERE relid = '${jobs}'::regclass) AS vacuuming`,
    },
    // Indexes cleaned always (the claim index is why it runs); a vacuum that cannot have the
    // table's lock at once (another vacuum, a migration) is skipped, not waited for.
    vacuumJobs: { text: `VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON) ${jobs}` },
  } as const;
}

export type HealthQueries = ReturnType<typeof healthQueries>;
