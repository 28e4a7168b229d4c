// Named queries of the migration runner. The schema identifier is validated and
// quoted by the caller; nothing else is interpolated.

export function migrationQueries(schema: string) {
  return {
    // One lock per schema, so different schemas migrate independently.
    lock: { text: `SELECT pg_advisory_lock(hashtext('baton.migrate:' || $1))` },
    unlock: { text: `SELECT pg_advisory_unlock(hashtext('baton.migrate:' || $1))` },
    createSchema: { text: `CREATE SCHEMA IF NOT EXISTS ${schema}` },
    createTable: {
      text: `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
        name text PRIMARY KEY,
        applied_at timestamptz NOT NULL DEFAULT now())`,
    },
    listApplied: { text: `SELECT name FROM ${schema}.schema_migrations ORDER BY name` },
    // Whether the migrations table exists yet ($1: its qualified name).
    tablePresent: { text: `SELECT to_regclass($1) IS NOT NULL AS present` },
    setSearchPath: { text: `SET LOCAL search_path TO ${schema}, public` },
    record: { text: `INSERT INTO ${schema}.schema_migrations (name) VALUES ($1)` },
  } as const;
}
