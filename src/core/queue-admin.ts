// Operator actions for the console: pausing and resuming queues fleet-wide, "run now", bulk
// replay/cancel, and the stats snapshot. Pause lives in the database (paused_queues, read by
// the claim statement itself), so every worker process honours it from its next claim; this
// module only validates, wakes the queue on resume, and reports per-id bulk outcomes.

import type { Executor } from '../driver/executor.ts';
import { BatonError, type ErrorCode, isBatonError } from '../types/errors.ts';
import { JOB_STATES, type Job, type JobState } from '../types/job.ts';
import type { StatsRow } from '../types/queue.ts';

export type { PausedQueue, StatsRow } from '../types/queue.ts';

/** Whether a queue is paused, and since when: what pauseQueue and resumeQueue answer. */
export type QueuePauseState = { queue: string; paused: true; pausedAt: Date } | { queue: string; paused: false; pausedAt: null };

/** One statement's view of the jobs table (see AdminApi.stats). */
export interface StatsSnapshot {
  /** The database's clock when the statement ran. */
  at: Date;
  /**
   * Every queue with a job or paused, by name. `scheduled`: its pending jobs whose run-at lies
   * ahead (counted in `counts.pending` too).
   */
  queues: Array<{ queue: string; paused: boolean; pausedAt: Date | null; counts: Record<JobState, number>; scheduled: number }>;
  /**
   * Jobs that finished within the window, by outcome: those among the newest 20,000 jobs by id
   * (STATS_SCAN_ROWS), so a lower bound when older jobs finish in it too.
   */
  window: {
    seconds: number;
    succeeded: number;
    deadLettered: number;
    cancelled: number;
    /** run_at -> started_at of the newest (up to 1,000) jobs that succeeded within the window; null when none did. */
    startLatencyMs: { count: number; p50: number | null; p95: number | null; max: number | null };
  };
}

/** The actions admin.bulk applies to a list of job ids. */
export const BULK_ACTIONS = ['replay', 'cancel', 'runNow'] as const;
/** One of BULK_ACTIONS. */
export type BulkAction = (typeof BULK_ACTIONS)[number];
/** Most ids one bulk call takes. */
export const BULK_IDS_MAX = 100;
export const STATS_WINDOW_SECONDS_DEFAULT = 60;
export const STATS_WINDOW_SECONDS_MAX = 3_600;

/** A bulk call's outcome for one id: the job as the action left it, or why it was refused. */
export type BulkItemResult =
  | { id: string; ok: true; job: Job }
  | { id: string; ok: false; code: ErrorCode; message: string; state?: JobState };

/** Refusals that concern one id only; any other error stops the run. */
const ITEM_ERRORS = new Set<ErrorCode>(['JOB_NOT_FOUND', 'JOB_STATE_CONFLICT', 'INVALID_ARGUMENT']);

export function pausedState(queue: string, pausedAt: Date | null): QueuePauseState {
  return pausedAt === null ? { queue, paused: false, pausedAt: null } : { queue, paused: true, pausedAt };
}

function queueNotFound(queue: string): BatonError {
  return new BatonError('QUEUE_NOT_FOUND', `queue ${JSON.stringify(queue)} has no job, no live worker and is not paused`, {
    details: { queue },
  });
}

export async function pauseQueue(executor: Executor, queue: string): Promise<QueuePauseState> {
  const pausedAt = await executor.queuePause({ queue });
  if (pausedAt === null) throw queueNotFound(queue);
  return pausedState(queue, pausedAt);
}

export async function resumeQueue(executor: Executor, wake: (queue: string) => void, queue: string): Promise<QueuePauseState> {
  const r = await executor.queueResume({ queue });
  if (r === null) throw queueNotFound(queue);
  // Workers that found the queue paused wait for a wake-up or their poll: send one now.
  if (r.wasPaused) wake(queue);
  return pausedState(queue, null);
}

/** A pending job due now, its queue woken; JOB_STATE_CONFLICT (with the state) unless pending. */
export async function runNow(
  executor: Executor,
  wake: (queue: string) => void,
  mustGet: (id: string) => Promise<Job>,
  id: string,
): Promise<Job> {
  const job = await executor.jobRunNow({ id });
  if (!job) {
    const current = await mustGet(id);
    throw new BatonError('JOB_STATE_CONFLICT', `job ${id} is ${current.state}; only pending jobs can be run now`, {
      details: { id, state: current.state },
    });
  }
  wake(job.queue);
  return job;
}

/**
 * Runs `action` on each id in turn. Each action is one conditional statement, so every id is
 * either done or refused with its reason (conflict, not found); none is half-done, and one
 * refusal does not stop the others.
 */
export async function bulk(ids: readonly string[], action: (id: string) => Promise<Job>): Promise<BulkItemResult[]> {
  if (ids.length < 1 || ids.length > BULK_IDS_MAX) {
    throw new BatonError('INVALID_ARGUMENT', `ids must hold 1 to ${BULK_IDS_MAX} job ids`, { details: { field: 'ids' } });
  }
  if (new Set(ids).size !== ids.length) {
    throw new BatonError('INVALID_ARGUMENT', 'ids must not repeat an id', { details: { field: 'ids' } });
  }
  const out: BulkItemResult[] = [];
  let broken: { code: ErrorCode; message: string } | null = null;
  for (const id of ids) {
    if (broken) {
      // The database failed on an earlier id: the rest are reported as not done, never guessed at.
      out.push({ id, ok: false, code: broken.code, message: `not attempted: ${broken.message}` });
      continue;
    }
    try {
      out.push({ id, ok: true, job: await action(id) });
    } catch (err) {
      const code: ErrorCode = isBatonError(err) ? err.code : 'INTERNAL';
      const message = isBatonError(err) ? err.message : 'internal error';
      if (!ITEM_ERRORS.has(code)) broken = { code, message };
      const state = isBatonError(err) ? (err.details as { state?: JobState } | undefined)?.state : undefined;
      out.push({ id, ok: false, code, message, ...(state ? { state } : {}) });
    }
  }
  return out;
}

/** Queues in name order, paused ones without jobs included; latencies to 0.1 ms. */
export function toStatsSnapshot(r: StatsRow, windowSeconds: number): StatsSnapshot {
  const paused = new Map(r.paused.map((p) => [p.queue, p.pausedAt]));
  const byQueue = new Map<string, Record<JobState, number>>();
  const counts = (queue: string) => {
    const c = byQueue.get(queue) ?? (Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>);
    byQueue.set(queue, c);
    return c;
  };
  for (const { queue, state, n } of r.counts) counts(queue)[state] = n;
  for (const queue of paused.keys()) counts(queue);
  const ms = (v: number | null) => (v === null ? null : Math.round(v * 10) / 10);
  const scheduled = new Map(r.scheduled.map((s) => [s.queue, s.n]));
  return {
    at: r.at,
    queues: [...byQueue]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([queue, c]) => ({
        queue,
        paused: paused.has(queue),
        pausedAt: paused.get(queue) ?? null,
        counts: c,
        // Never more than the pending count: that was read by the same statement, a moment apart.
        scheduled: Math.min(scheduled.get(queue) ?? 0, c.pending),
      })),
    window: {
      seconds: windowSeconds,
      succeeded: r.succeeded,
      deadLettered: r.deadLettered,
      cancelled: r.cancelled,
      startLatencyMs: { count: r.latency.count, p50: ms(r.latency.p50), p95: ms(r.latency.p95), max: ms(r.latency.max) },
    },
  };
}
