// Every named statement of flow control (migration 0015), as one object per schema: the claims
// (flow-claim.ts) and the admin writes and snapshot (flow-admin.ts), merged by disjoint.ts.

import { disjoint } from './disjoint.ts';
import { flowAdminQueries } from './flow-control-admin.ts';
import { flowClaimQueries } from './flow-control-claim.ts';

export function flowQueries(schema: string) {
  return disjoint(flowClaimQueries(schema), flowAdminQueries(schema));
}

export type FlowQueries = ReturnType<typeof flowQueries>;
