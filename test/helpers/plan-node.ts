// EXPLAIN (ANALYZE, FORMAT JSON) nodes, as the plan tests read them, and the one way they
// run a statement to read them: prepared, under a chosen plan_cache_mode, rolled back.

import type pg from 'pg';

export interface PlanNode {
  'Node Type': string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Join Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** Every scan of the jobs table in the plan. */
export function jobScans(n: PlanNode): PlanNode[] {
  const here = n['Relation Name'] === 'jobs' && /Scan/.test(n['Node Type']) ? [n] : [];
  return [...here, ...(n.Plans ?? []).flatMap(jobScans)];
}

/** Rows produced or thrown away by every node, times its loops: the work the plan did. */
export function rowsVisited(n: PlanNode): number {
  const own =
    (n['Actual Rows'] +
      (n['Rows Removed by Filter'] ?? 0) +
      (n['Rows Removed by Join Filter'] ?? 0) +
      (n['Rows Removed by Index Recheck'] ?? 0)) *
    n['Actual Loops'];
  return own + (n.Plans ?? []).reduce((s, c) => s + rowsVisited(c), 0);
}

/** Every index the plan reads (index, index-only and bitmap index scans). */
export function indexesUsed(n: PlanNode): string[] {
  return [...(n['Index Name'] ? [n['Index Name']] : []), ...(n.Plans ?? []).flatMap(indexesUsed)];
}

/**
 * EXPLAIN ANALYZE of `text` prepared and executed with `args` (SQL literals: EXECUTE takes no
 * bind parameters) under plan_cache_mode `mode`, in a transaction that is rolled back.
 */
export async function explainPrepared(pool: pg.Pool, text: string, args: readonly string[], mode: string): Promise<PlanNode> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
    await client.query(`PREPARE s AS ${text}`);
    const execute = args.length > 0 ? `EXECUTE s(${args.join(', ')})` : 'EXECUTE s';
    const r = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${execute}`);
    return (r.rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;
  } finally {
    await client.query('ROLLBACK');
    // Only s: the pool's client keeps its own named statements prepared.
    await client.query('DEALLOCATE s');
    client.release();
  }
}
