// --profile-sql: the statements that used the most server time across the whole run
// (pg_stat_statements, every database of the embedded server).

import type { PgServer } from './server.ts';

export interface SqlProfileRow {
  query: string;
  calls: number;
  totalMs: number;
  meanMs: number;
  rows: number;
  /** Times it was planned (track_planning): a named statement whose plan is cached is planned far fewer times than called. */
  plans?: number;
  /** Server time spent planning it. */
  planMs?: number;
  /** The database it ran in ("db OID" once dropped): one per run, so a run's statements can be told apart. */
  database?: string;
}

export async function topStatements(server: PgServer, limit = 15): Promise<SqlProfileRow[]> {
  const rows = await server.query<{
    query: string;
    calls: string;
    total: number;
    mean: number;
    rows: string;
    plans: string;
    plan: number;
    database: string | null;
  }>(
    `SELECT left(regexp_replace(s.query, '\\s+', ' ', 'g'), 240) AS query, s.calls, s.total_exec_time AS total,
            s.mean_exec_time AS mean, s.rows, s.plans, s.total_plan_time AS plan, COALESCE(d.datname, 'db ' || s.dbid) AS database
       FROM pg_stat_statements s LEFT JOIN pg_database d ON d.oid = s.dbid
      ORDER BY s.total_exec_time DESC LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({
    query: r.query,
    calls: Number(r.calls),
    totalMs: r.total,
    meanMs: r.mean,
    rows: Number(r.rows),
    plans: Number(r.plans),
    planMs: r.plan,
    ...(r.database ? { database: r.database } : {}),
  }));
}
