// When an execution ends at its waits: steps, sleeps, event waits and children started together
// run concurrently, so a wait that is not over does not end the execution at once. It parks, and
// the execution suspends only once nothing else is in flight (every step's outcome committed,
// every wait armed or parked) and a turn of the event loop brought no new call, with every
// parked wait at once (the run wakes at the earliest). A function that returns meanwhile (a
// race another branch won) is not suspended. A call may also hold, in flight, until something
// else of the execution happens or it has been quiet for a while (context.ts, new steps).

import type { RunLease } from '../../driver/workflow-store.ts';
import type { ExecutionDeps } from './execution.ts';

/** A wait that is not over, as the suspend records it. */
export interface ParkedWait {
  name: string;
  occurrence: number;
  kind: 'sleep' | 'event' | 'children';
  /** An event wait's first name, shown in listings as what the run waits for; null otherwise. */
  waitEvent: string | null;
  /** After the suspend: true when the wait ended meanwhile and the run must be woken (children). */
  recheck?: () => Promise<boolean>;
}

/** Writes the suspend of these waits; answers what ends the execution (Suspended, Stop, LeaseLostError). */
export type SuspendFn = (waits: ParkedWait[]) => Promise<unknown>;

/**
 * Gives the driving job back for the waits parked together (one transaction, fenced by the
 * lease): the run wakes at the earliest wake-up (never after its deadline), or now when an event
 * that ends one of them is here (each event wait's names, match and deadline are on its step).
 * false: the write was refused.
 */
export async function suspendWaits(d: Pick<ExecutionDeps, 'store' | 'wake'>, lease: RunLease, waits: ParkedWait[]): Promise<boolean> {
  const s = await d.store.workflowSuspend({
    ...lease,
    steps: waits.map((w) => ({ name: w.name, occurrence: w.occurrence })),
    state: waits.every((w) => w.kind === 'sleep') ? 'sleeping' : 'waiting',
    waitEvent: waits.find((w) => w.kind === 'event')?.waitEvent ?? null,
  });
  if (!s.ok) return false;
  // The event arrived between the look and the suspend: the job is due now, wake a worker.
  if (s.due) d.wake(s.queue);
  else await recheck(d, lease, waits);
  return true;
}

/** A wait that ended while the run was still running woke nobody: wake the run now (best effort; children also poll). */
async function recheck(d: Pick<ExecutionDeps, 'store' | 'wake'>, lease: RunLease, waits: ParkedWait[]): Promise<void> {
  try {
    for (const w of waits) {
      if (!w.recheck || !(await w.recheck())) continue;
      const queue = await d.store.workflowWakeRun({ jobId: lease.jobId });
      if (queue) d.wake(queue);
      return;
    }
  } catch {
    // The children wait's poll wakes the run anyway.
  }
}

/** How many late quiets (hold()) a call waits through before it takes the next one as quiet. */
const LATE_QUIETS_MAX = 4;

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class Parking {
  readonly #suspend: SuspendFn;
  /** Calls in flight: a step running or committing, a wait being armed or finished. */
  #busy = 0;
  #idleWaiters: Array<() => void> = [];
  /** Waiting for the next call to enter or leave (hold()). */
  #activityWaiters: Array<() => void> = [];
  /** Calls in flight that wait in hold(). */
  #holding = 0;
  readonly #waits: ParkedWait[] = [];
  #scheduled = false;
  #finished = false;
  #suspending = false;
  /** Rejects with what ended the execution once it suspended (or the suspend was refused). */
  readonly ended: Promise<never>;
  #end!: (reason: unknown) => void;

  constructor(suspend: SuspendFn) {
    this.#suspend = suspend;
    this.ended = new Promise<never>((_, reject) => {
      this.#end = reject;
    });
    // Raced by executeRun, which handles it; an execution that never suspends leaves it pending.
    this.ended.catch(() => undefined);
  }

  begin(): void {
    this.#busy++;
    if (this.#activityWaiters.length > 0) this.#moved();
  }

  end(): void {
    this.#busy--;
    if (this.#activityWaiters.length > 0) this.#moved();
    if (this.#busy === 0) for (const w of this.#idleWaiters.splice(0)) w();
  }

  #moved(): void {
    for (const w of this.#activityWaiters.splice(0)) w();
  }

  /**
   * Waits, as a call in flight, until `reached()` or until `quietMs` pass with no call entering or
   * leaving and none in flight but those holding here (timers and outside I/O of the function are
   * not seen: the quiet is the engine's), or `stop()`. Answers `reached()`. A quiet whose timer
   * fired late does not count (up to LATE_QUIETS_MAX times): the event loop itself stalled (a
   * loaded machine, GC, synchronous work), and timers run before the I/O callbacks that were
   * ready meanwhile, so a branch's I/O may have ended in time, unseen behind the timer.
   */
  async hold(reached: () => boolean, quietMs: number, stop: () => boolean): Promise<boolean> {
    this.#holding++;
    try {
      let late = 0;
      while (!reached() && !stop()) {
        const r = await this.#activity(quietMs);
        if (r === 'moved' || this.#busy > this.#holding) continue;
        if (r === 'late' && late++ < LATE_QUIETS_MAX) continue;
        break;
      }
      return reached();
    } finally {
      this.#holding--;
    }
  }

  /** Resolves when a call enters or leaves (moved), or when `ms` pass first: quiet, or late when its timer fired over half of `ms` late. */
  #activity(ms: number): Promise<'moved' | 'quiet' | 'late'> {
    return new Promise((resolve) => {
      const due = performance.now() + ms;
      const waiter = () => {
        clearTimeout(timer);
        resolve('moved');
      };
      const timer = setTimeout(() => {
        this.#activityWaiters = this.#activityWaiters.filter((w) => w !== waiter);
        resolve(performance.now() - due > ms / 2 ? 'late' : 'quiet');
      }, ms);
      this.#activityWaiters.push(waiter);
    });
  }

  /** Resolves once no call is in flight. */
  idle(): Promise<void> {
    return this.#busy === 0 ? Promise.resolve() : new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Parks a wait that is not over: its promise never settles in this execution. */
  park(wait: ParkedWait): Promise<never> {
    this.#waits.push(wait);
    if (!this.#scheduled) {
      this.#scheduled = true;
      void this.#suspendWhenIdle();
    }
    return new Promise<never>(() => undefined);
  }

  /** The function settled: no suspend starts now; rejects when one already under way ended the execution. */
  async finish(): Promise<void> {
    this.#finished = true;
    if (this.#suspending) await this.ended;
  }

  async #suspendWhenIdle(): Promise<void> {
    for (;;) {
      await this.idle();
      // Calls that the settled ones lead to (the next line of a Promise.all's caller) come within a turn.
      await turn();
      if (this.#finished) return;
      if (this.#busy === 0) break;
    }
    this.#suspending = true;
    this.#end(await this.#suspend([...this.#waits]).catch((err: unknown) => err));
  }
}
