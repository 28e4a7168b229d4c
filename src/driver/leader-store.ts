// The seam between the leader lease (core/leader-lease.ts) and its row (migration 0019): take,
// renew and give up the lease, and run a transaction fenced by it. The epoch is a bigint as
// decimal text; lease times are the database's.
// @internal — not a public API.

import type { Queryable } from './queryable.ts';

export interface LeaderAcquireParams {
  holder: string;
  leaseMs: number;
  /** This process's presence lock key, null without one (then only expiry frees the lease). */
  lockKey: number | null;
  /** The presence locks' advisory-lock namespace. */
  lockNamespace: number;
  /** The epoch this process last held, if any: its own lapsed lease is taken again at once. */
  lastEpoch: string | null;
}

/** The outcome of a fenced transaction: `held` false when the epoch no longer held the lease (nothing was written). */
export type Fenced<T> = { held: true; value: T } | { held: false };

export interface LeaderStore {
  /** Takes the lease under a new epoch if it is free (expired, or its holder's session gone); the epoch, or null. */
  leaderAcquire(p: LeaderAcquireParams): Promise<string | null>;
  /** Extends the lease held under `epoch`; false when it is no longer held (taken over, or expired). */
  leaderRenew(p: { holder: string; epoch: string; leaseMs: number; lockKey: number | null }): Promise<boolean>;
  /** Ends the lease held under `epoch` now (no-op if it is no longer held). */
  leaderRelease(p: { holder: string; epoch: string }): Promise<void>;
  /** The live lease's holder and epoch, or null when none is live. */
  leaderCurrent(): Promise<{ holder: string; epoch: string; acquiredAt: Date; expiresAt: Date } | null>;
  /**
   * Runs `fn` in a transaction that holds the lease's fence for `epoch` from its first statement
   * to its commit: when the epoch no longer holds an unexpired lease, nothing runs and nothing is
   * written. The server ends the transaction if it sits idle for `idleMs` (a holder paused inside
   * it). `stillLeader` is asked before COMMIT: false rolls back.
   */
  leaderFenced<T>(
    p: { epoch: string; idleMs: number; stillLeader: () => boolean },
    fn: (client: Queryable) => Promise<T>,
  ): Promise<Fenced<T>>;
}
