// The seam between the outbox code and its table: one method per operation. Claims skip
// locked rows and hide what they take behind next_attempt_at; every outcome write names the
// attempt it claimed (the fencing token), so a late write after a lapsed claim matches nothing.
// A claimed head of an ordering key comes with its key's run: messages its claim holds back
// from every other claim, published under it one at a time.
// @internal — not a public API.

import type { NewOutboxMessage, OutboxError, OutboxMessage, OutboxState, RecordResult } from '../types/outbox.ts';
import type { Queryable } from './queryable.ts';

export interface OutboxClaimResult {
  /** Claimed: attempt spent, hidden from other claims until the visibility timeout. */
  claimed: OutboxMessage[];
  /** Messages whose last claim was abandoned with no attempt left: dead-lettered by this claim. */
  exhausted: OutboxMessage[];
  /**
   * By claimed head id: the pending messages of its ordering key after it, in id order, each due
   * and with an attempt left (at most the batch's room, shared out round robin). Not claimed (as
   * read: attempt not spent): no claim can take them while the head is pending. Publish them
   * after the head, one at a time, while the head's claim holds; write them with `run: true`.
   */
  runs: Map<string, OutboxMessage[]>;
}

/**
 * The fence of a claim's outcome write: the attempt it claimed, and the replays the message had
 * then. A replay starts the attempts again from 0, so the attempt alone could match a claim
 * made before the replay; the pair only grows.
 */
export interface OutboxClaimFence {
  id: string;
  attempt: number;
  replayCount: number;
  /**
   * A run message (published under its head's claim, not claimed itself): `attempt` is the one it
   * was read with, and the write spends it (attempt + 1), as a claim would have. Default false.
   */
  run?: boolean;
}

export interface OutboxFailItem extends OutboxClaimFence {
  error: OutboxError;
  /** true: dead-letter now (the destination refused it for good); false: retry while attempts remain. */
  reject: boolean;
  /** The earliest retry the destination asked for; else full-jitter backoff. */
  retryAfterMs: number | null;
}

export interface OutboxListParams {
  state?: OutboxState | undefined;
  destination?: string | undefined;
  tenantId?: string | undefined;
  limit: number;
  offset: number;
  /** Only messages with a smaller id (keyset paging). */
  cursor?: string | undefined;
}

export interface OutboxStatsRow {
  byDestination: Array<{ destination: string; state: OutboxState; n: number }>;
  /** Seconds since the oldest pending message was recorded; null when none is pending. */
  oldestPendingAgeSeconds: number | null;
}

export interface OutboxStore {
  /**
   * One INSERT for the batch, on `client` (the caller's transaction) or the pool. The NOTIFY on
   * `channel` rides in the statement, so it leaves with the commit. A duplicate messageKey is
   * skipped and read back. Messages with an ordering key first take a transaction-scoped
   * advisory lock per key, so record order (ids) follows commit order within a key.
   */
  outboxInsertMany(p: { messages: NewOutboxMessage[]; client?: Queryable | undefined; channel: string }): Promise<RecordResult[]>;
  outboxClaim(p: { destinations: string[]; limit: number; visibilityMs: number }): Promise<OutboxClaimResult>;
  /** Returns the ids written (those whose claim was still current). */
  outboxMarkPublishedMany(items: OutboxClaimFence[]): Promise<Set<string>>;
  /**
   * outboxMarkPublishedMany, and in the same statement the claim of the next message of each ordering key
   * it wrote a message of (up to `limit` heads, with their runs, as claim() takes them): when
   * that message is the key's oldest pending one, due and not locked. The key goes on without
   * waiting for a claim.
   */
  outboxMarkPublishedClaimNext(p: {
    items: OutboxClaimFence[];
    limit: number;
    visibilityMs: number;
  }): Promise<{ written: Set<string>; next: OutboxClaimResult }>;
  /** Returns id -> new state for the rows written. */
  outboxFailMany(p: { items: OutboxFailItem[]; backoffBaseMs: number; backoffCapMs: number }): Promise<Map<string, OutboxState>>;
  /** With tenantId, null for another tenant's message: the statement itself is scoped. */
  outboxGet(id: string, tenantId?: string): Promise<OutboxMessage | null>;
  outboxList(p: OutboxListParams): Promise<OutboxMessage[]>;
  /** Dead-lettered only: back to pending with a fresh budget, replayCount + 1; null otherwise. */
  outboxReplay(id: string): Promise<OutboxMessage | null>;
  /** Up to `limit` dead letters, oldest first, back to pending. */
  outboxReplayDeadLetters(p: { limit: number; destination?: string | undefined; tenantId?: string | undefined }): Promise<OutboxMessage[]>;
  outboxStats(p: { tenantId?: string | undefined }): Promise<OutboxStatsRow>;
  /**
   * Deletes up to `limit` messages finished in `state` more than `olderThanMs` ago; returns how
   * many. A leader-only write, fenced by `epoch`: deletes nothing unless it holds the leader lease.
   */
  outboxPurge(p: { state: 'published' | 'dead_lettered'; olderThanMs: number; limit: number; epoch: string }): Promise<number>;
}
