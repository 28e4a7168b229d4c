// Flow control's limits and its snapshot (migration 0015), as the store reads and writes them.

/** A rate limit: `limit` starts per `periodMs`, a token bucket of that size. */
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

/** A queue in the flow snapshot: its limits, what runs and waits, its bucket's tokens. */
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

/** A concurrency key in the flow snapshot: its jobs by state, its pattern's cap and rate, its bucket's tokens. */
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

/** Flow control as it stands: queues, key patterns, tenant weights and what waits on a cap (admin.flow()). */
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
