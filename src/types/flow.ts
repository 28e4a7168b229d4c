// Flow control's limits and its snapshot (migration 0015), as the store reads and writes them.

export interface RateLimit {
  /** Starts allowed per period (also the bucket's size: a burst of up to `limit`). */
  limit: number;
  periodMs: number;
}

/** A queue's or a key pattern's limits; null: none. */
export interface FlowLimits {
  /** Most jobs running at once, across every process. */
  concurrencyLimit: number | null;
  rateLimit: RateLimit | null;
}

export interface FlowQueueState extends FlowLimits {
  queue: string;
  /** A job with a concurrency key was enqueued in this queue. */
  keyed: boolean;
  running: number;
  /** Pending jobs due now. */
  due: number;
  /** Tokens in the queue's bucket now (null without a rate limit). */
  tokens: number | null;
}

export interface FlowKeyState {
  key: string;
  pending: number;
  due: number;
  running: number;
  /** The cap of the most specific pattern (a job's own concurrencyLimit is not shown). */
  concurrencyLimit: number | null;
  rateLimit: number | null;
  tokens: number | null;
}

export interface FlowSnapshot {
  queues: FlowQueueState[];
  keyPatterns: Array<FlowLimits & { pattern: string }>;
  weights: Array<{ tenantId: string; weight: number }>;
  /** Pending and running jobs per queue and tenant (at most FLOW_SNAPSHOT_GROUPS_MAX groups). */
  tenants: Array<{ queue: string; tenantId: string; pending: number; running: number }>;
  /** Keys with pending or running jobs (at most FLOW_SNAPSHOT_GROUPS_MAX). */
  keys: FlowKeyState[];
  /** Due jobs that wait because a cap is reached, or a bucket is empty, per queue. */
  held: Array<{ queue: string; reason: 'cap' | 'rate'; jobs: number }>;
}
