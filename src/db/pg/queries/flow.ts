// Every named statement of flow control (migration 0015), as one object per schema: the claims
// (flow-claim.ts) and the admin writes and snapshot (flow-admin.ts). The two share no key: a
// shared one fails to compile (disjoint), where the spread would let one silently replace the other.

import { flowAdminQueries } from './flow-admin.ts';
import { flowClaimQueries } from './flow-claim.ts';

/** `b`, typed never when it has a key of `a`. */
type Disjoint<A, B> = [keyof A & keyof B] extends [never] ? B : never;
const disjoint = <A extends object, B extends object>(a: A, b: Disjoint<A, B>): A & B => ({ ...a, ...b });

export function flowQueries(schema: string) {
  return disjoint(flowClaimQueries(schema), flowAdminQueries(schema));
}

export type FlowQueries = ReturnType<typeof flowQueries>;
