// Read models of queues, as the store answers them: pauses and the console's stats rows.

import type { JobState } from './job.ts';

/** A paused queue and since when, as admin.pausedQueues lists it. */
export interface PausedQueue {
  queue: string;
  pausedAt: Date;
}

/** The snapshot statement's answer, as the executor reads it. */
export interface StatsRow {
  at: Date;
  counts: Array<{ queue: string; state: JobState; n: number }>;
  paused: PausedQueue[];
  /** Pending jobs whose run_at lies ahead, per queue (queues with none are absent). */
  scheduled: Array<{ queue: string; n: number }>;
  succeeded: number;
  deadLettered: number;
  cancelled: number;
  latency: { count: number; p50: number | null; p95: number | null; max: number | null };
}
