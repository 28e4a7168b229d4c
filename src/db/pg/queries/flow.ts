// Every named statement of flow control (migration 0015), as one object per schema: the claims
// (flow-claim.ts) and the admin writes and snapshot (flow-admin.ts). The two must share no key,
// or the spread would let one statement silently replace another.

import { flowAdminQueries } from './flow-admin.ts';
import { flowClaimQueries } from './flow-claim.ts';

export function flowQueries(schema: string) {
  return { ...flowClaimQueries(schema), ...flowAdminQueries(schema) } as const;
}

export type FlowQueries = ReturnType<typeof flowQueries>;
