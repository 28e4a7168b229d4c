// What one wait call (sleep, event wait, children join) does against the store in an execution:
// a wait the history holds as over answers its output; a new one is armed (a different kind
// stored under its key is non-determinism) and finished at once when it is already over (the
// sleep due, the event here, every child finished); else it answers NotOver and the caller
// parks it (parking.ts). Every write is fenced by the lease; a refused one ends the execution.

import type { HistoryStep, RunLease, WorkflowStore } from '../../driver/workflow-store.ts';
import { CHILDREN_POLL_MS, childrenMayBeOver, joinedChildren } from './children.ts';
import type { EventWait } from './event-wait.ts';
import type { ExecutionDeps } from './execution.ts';
import { displayKey } from './history.ts';
import type { ParkedWait } from './parking.ts';

/** What the execution lends a wait call: its store, lease and counters, and its ways to end. */
export interface WaitIo {
  readonly store: WorkflowStore;
  readonly lease: RunLease;
  readonly counters: ExecutionDeps['counters'];
  /** A fenced write was refused: throws what ends the execution. */
  refused(): Promise<never>;
  /** Records non-determinism (the run blocks) and throws it. */
  diverged(what: string, steps: string[]): never;
  /** Before a wait the history does not hold (at position `seq`): throws when it stands for a renamed or removed one. */
  checkNew(name: string, occurrence: number, seq: number): Promise<void>;
  /** This execution found a wait over (its write set the run's crash count back, as a step commit does). */
  committed(): void;
}

/** The call's key and position, and its history entry if any. */
export interface WaitCall {
  name: string;
  occurrence: number;
  seq: number;
  past: HistoryStep | undefined;
}

/** A wait's call that found the wait not over: it parks. */
export class NotOver {
  constructor(readonly wait: ParkedWait) {}
}

const over = (io: WaitIo, output: unknown): unknown => {
  io.committed();
  return output;
};

/** A sleep or event wait: its output when it is over, else NotOver. */
export async function sleepOrEvent(
  io: WaitIo,
  { name, occurrence, seq, past }: WaitCall,
  kind: 'sleep' | 'event',
  wait: EventWait | null,
  delayMs: number | null,
  until: Date | null,
): Promise<unknown> {
  if (past?.status === 'succeeded') {
    io.counters.stepReplaysAvoided++;
    return past.output;
  }
  if (!past) await io.checkNew(name, occurrence, seq);
  const shown = displayKey(name, occurrence);
  const step = { ...io.lease, name, occurrence };
  const notOver = new NotOver({ name, occurrence, kind, waitEvent: wait?.names[0] ?? null });
  if (past?.status === 'waiting') {
    // Armed by an earlier execution: its wake-up time stands; see whether the wait is over.
    const fin = await io.store.workflowFinishWait({ ...step, stepKey: shown });
    if (!fin.ok) return io.refused();
    return fin.done ? over(io, fin.output) : notOver;
  }
  const armed = await io.store.workflowArmWait({
    ...step,
    seq,
    kind,
    wait: wait && { names: wait.names, match: wait.match },
    delayMs,
    until,
  });
  if (!armed.ok) return io.refused();
  if (armed.kind !== kind) io.diverged(`"${shown}" is a ${armed.kind} in its history, not a ${kind}`, [shown]);
  if (armed.status === 'succeeded') return armed.output;
  if (kind === 'event' || armed.due) {
    const fin = await io.store.workflowFinishWait({ ...step, stepKey: shown });
    if (!fin.ok) return io.refused();
    if (fin.done) return over(io, fin.output);
  }
  return notOver;
}

/** The join of ctx.all's children `ids`: every outcome in order once all have finished, else NotOver. */
export async function joinChildren(io: WaitIo, { name, occurrence, seq, past }: WaitCall, ids: string[]): Promise<unknown> {
  if (past?.status === 'succeeded') {
    io.counters.stepReplaysAvoided++;
    return past.output;
  }
  if (!past) await io.checkNew(name, occurrence, seq);
  const step = { ...io.lease, name, occurrence };
  const armed = await io.store.workflowArmWait({ ...step, seq, kind: 'children', wait: null, delayMs: CHILDREN_POLL_MS, until: null });
  if (!armed.ok) return io.refused();
  if (armed.kind !== 'children') io.diverged(`"${name}" is a ${armed.kind} in its history, not a children wait`, [name]);
  if (armed.status === 'succeeded') return armed.output;
  const joined = await joinedChildren(io.store, ids);
  if (joined) {
    const fin = await io.store.workflowCompleteWait({ ...step, output: JSON.stringify(joined) });
    if (!fin.ok) return io.refused();
    if (fin.done) return over(io, fin.output);
  }
  // A child that finishes between this look and the suspend sees this run still running and
  // wakes nobody: the suspend looks again once the run is waiting (children.ts).
  const recheck = () => childrenMayBeOver(io.store, ids);
  return new NotOver({ name, occurrence, kind: 'children', waitEvent: null, recheck });
}
