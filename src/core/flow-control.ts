// What a worker process knows of flow control, per queue it works: whether the queue is
// controlled (has caps, rate limits or keyed jobs, so its claims go through the controlled
// claim) and where its round-robin cursors stand. Knowledge only steers which statement runs:
// every limit is enforced in the database, and a stale "not controlled" makes the plain claim
// return nothing for that queue (it checks), never exceed a limit.

import type { Executor, FairCursor } from '../driver/executor.ts';

/** How a queue's claims share out among tenants: 'tenant' takes turns by tenant, 'none' is first in, first out. */
export type Fairness = 'tenant' | 'none';

export interface QueueFlow {
  fair: boolean;
  cursor: FairCursor;
  keyCursor: string;
  /** The last fair claim saw one tenant: the next one tries the one-tenant statement first. */
  solo: boolean;
  /** No claim has found the queue marked as holding another tenant's jobs: try the FIFO pick first. */
  plain: boolean;
}

export class FlowState {
  readonly #executor: Executor;
  readonly #queues = new Map<string, QueueFlow>();
  #controlled = new Set<string>();
  readonly #onControlled: (queues: string[]) => void;

  /** `onControlled`: queues found controlled that were not (their claims should go again). */
  constructor(executor: Executor, queues: Record<string, Fairness>, onControlled: (queues: string[]) => void) {
    this.#executor = executor;
    this.#onControlled = onControlled;
    for (const [q, f] of Object.entries(queues))
      this.#queues.set(q, { fair: f === 'tenant', cursor: { tenant: '', used: 0 }, keyCursor: '', solo: false, plain: true });
  }

  queue(name: string): QueueFlow {
    let q = this.#queues.get(name);
    if (!q) {
      q = { fair: true, cursor: { tenant: '', used: 0 }, keyCursor: '', solo: false, plain: true };
      this.#queues.set(name, q);
    }
    return q;
  }

  /**
   * Whether `queue` was controlled at the last refresh. Until the first one answers, no queue
   * is: their plain claims take nothing from a controlled queue, and the answer wakes them.
   */
  controlled(queue: string): boolean {
    return this.#controlled.has(queue);
  }

  /** Re-reads which queues are controlled (at start and on each poll tick). Never rejects. */
  async refresh(): Promise<void> {
    if (this.#queues.size === 0) return;
    try {
      const next = await this.#executor.flowListControlled({ queues: [...this.#queues.keys()] });
      const added = [...next].filter((q) => !this.#controlled.has(q));
      this.#controlled = next;
      if (added.length > 0) this.#onControlled(added);
    } catch {
      // Keep what we knew: the claim itself reports a database that is down.
    }
  }
}
