// --profile-sql: the statements that used the most server time across the whole run
// (pg_stat_statements, every database of the embedded server).

import type { PgServer } from './server.ts';

export interface SqlProfileRow {
  query: string;
  calls: number;
  totalMs: number;
  meanMs: number;
  rows: number;
}

export async function topStatements(server: PgServer, limit = 15): Promise<SqlProfileRow[]> {
  const rows = await server.query<{ query: string; calls: string; total: number; mean: number; rows: string }>(
    `SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 240) AS query, calls, total_exec_time AS total,
            mean_exec_time AS mean, rows
       FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({ query: r.query, calls: Number(r.calls), totalMs: r.total, meanMs: r.mean, rows: Number(r.rows) }));
}
