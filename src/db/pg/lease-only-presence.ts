// The presence of a worker with no session of its own (through a transaction pooler, with no
// direct URL): it holds no lock and writes no row in `workers`, so no sweep ever marks it gone
// and its leases are reclaimed only when they expire; it counts as held from start, so the
// worker claims. The leader lease it may take records no lock key: it is taken over at expiry.

import type { Presence } from '../../driver/executor.ts';

export function leaseOnlyPresence(hooks: { onAcquired: () => void }): Presence {
  let held = false;
  return {
    async start() {
      held = true;
      hooks.onAcquired();
    },
    async stop() {
      held = false;
    },
    get held() {
      return held;
    },
    lockKey: null,
  };
}
