// EXPLAIN (ANALYZE, FORMAT JSON) nodes, as the plan tests read them.

export interface PlanNode {
  'Node Type': string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Join Filter'?: number;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** Every scan of the jobs table in the plan. */
export function jobScans(n: PlanNode): PlanNode[] {
  const here = n['Relation Name'] === 'jobs' && /Scan/.test(n['Node Type']) ? [n] : [];
  return [...here, ...(n.Plans ?? []).flatMap(jobScans)];
}
