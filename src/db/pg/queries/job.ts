// Named queries for the jobs table family, built once per engine from the quoted schema: the
// inserts (job-insert.ts), the lease statements (job-lease.ts) and the operator's
// (job-admin.ts), over the fragments they share (job-fragments.ts). One object, so a caller
// and the suites that match statement texts reach every statement by one name (disjoint.ts).

import { disjoint } from './disjoint.ts';
import { jobAdminQueries } from './job-admin.ts';
import { jobInsertQueries } from './job-insert.ts';
import { jobLeaseQueries } from './job-lease.ts';

// Re-exported: the tests, the chaos suite and the benchmarks reach the family through this file.
export { FINISHED_BLOCK_SHIFT } from './job-fragments.ts';
export { CANCEL_REQUESTED, TOKEN_FENCE, TOKEN_FLOOR_STEP } from './job-lease.ts';

export function jobQueries(schema: string) {
  return disjoint(disjoint(jobInsertQueries(schema), jobLeaseQueries(schema)), jobAdminQueries(schema));
}

export type JobQueries = ReturnType<typeof jobQueries>;
