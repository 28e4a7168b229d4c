// EXPLAIN (ANALYZE, FORMAT JSON) nodes, as the plan tests read them.

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
