// A run's deadline (runTimeoutMs) as an execution meets it: a refused write is read as the store
// says why. A run past its deadline is recorded timed_out by whichever execution meets it (the
// store does it, decided by the database clock); a parent waiting for it is made due, so the
// wake-up is sent here.

import type { Refusal, RunLease } from '../../driver/workflow-store.ts';
import type { ExecutionDeps } from './execution.ts';

/** Why the store refused an execution's write; a timed-out run's waiting parent is woken. */
export async function refusalOf(d: Pick<ExecutionDeps, 'store' | 'wake'>, lease: RunLease): Promise<Refusal> {
  const r = await d.store.workflowRefusal(lease);
  if (r.kind === 'timed_out' && r.wokeQueue) d.wake(r.wokeQueue);
  return r;
}
