// The outbox's messages as stored (migration 0013): what the store reads and writes.

/** Every state an outbox message can be in. */
export const OUTBOX_STATES = ['pending', 'published', 'dead_lettered'] as const;
/** One of OUTBOX_STATES. */
export type OutboxState = (typeof OUTBOX_STATES)[number];

/** Why an outbox message was dead-lettered: its publisher rejected it, or its attempts ran out. */
export const DEAD_LETTER_REASONS = ['rejected', 'attempts_exhausted'] as const;
/** One of DEAD_LETTER_REASONS. */
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

/** A validated, defaulted message ready to insert. */
export interface NewOutboxMessage {
  tenantId: string;
  destination: string;
  topic: string;
  payload: unknown;
  headers: Record<string, string>;
  messageKey: string;
  orderingKey: string | null;
  maxAttempts: number;
}

/** A stored message. `attempt` counts claims; it is also the fencing token of the current claim. */
export interface OutboxMessage extends NewOutboxMessage {
  id: string;
  state: OutboxState;
  attempt: number;
  nextAttemptAt: Date;
  lastError: OutboxError | null;
  deadLetterReason: DeadLetterReason | null;
  replayCount: number;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

/** What a failed publish left behind (the database adds the time). */
export interface OutboxError {
  name: string;
  message: string;
  at?: string;
}

/** The result of a record: the stored message, and whether this call created it (false: the messageKey existed). */
export interface RecordResult {
  message: OutboxMessage;
  created: boolean;
}
