// The operator's reads and writes: a job by id, replay, cancel, run now, retention's walk, the
// counts by queue, pausing queues and the stats snapshot. Each write is one statement, and its SQL
// (queries/job-admin.ts, queue.ts) keeps the invariants: finished counts, a live lease left alone.

import { cancelChannelFor } from '../../driver/channels.ts';
import type { JobPurgeScanParams, JobPurgeScanResult } from '../../driver/executor.ts';
import type { JobState } from '../../types/job.ts';
import type { PausedQueue, StatsRow } from '../../types/queue.ts';
import { translatePgError } from './errors.ts';
import type { ExecutorStatements } from './executor-statements.ts';
import { queryRows } from './query-rows.ts';
import { compareIds, type JobRow, type JobSummaryRow, rowToJob, rowToSummary } from './rows.ts';

type JobDb = Pick<ExecutorStatements, 'pool' | 'job'>;
type QueueDb = Pick<ExecutorStatements, 'pool' | 'queue'>;

export async function purgeScan(db: JobDb, p: JobPurgeScanParams): Promise<JobPurgeScanResult> {
  const ages = [p.ages.succeeded, p.ages.cancelled, p.ages.dead_lettered];
  const youngest = Math.min(...ages.filter((a): a is number => a !== null));
  const [r] = await queryRows<{ last: string | null; done: boolean; deleted: JobPurgeScanResult['deleted'] }>(db.pool, db.job.purgeScan, [
    p.after,
    p.read,
    ...ages,
    p.epoch,
    Number.isFinite(youngest) ? youngest : 0,
  ]);
  return { last: r?.last ?? null, done: r?.done ?? true, deleted: r?.deleted ?? [] };
}

export async function get(db: JobDb, p: { id: string; tenantId?: string | undefined }) {
  const rows =
    p.tenantId === undefined
      ? await queryRows<JobRow>(db.pool, db.job.get, [p.id])
      : await queryRows<JobRow>(db.pool, db.job.getInTenant, [p.id, p.tenantId]);
  return rows[0] ? rowToJob(rows[0]) : null;
}

export async function runNow(db: JobDb, p: { id: string }) {
  const rows = await queryRows<JobRow>(db.pool, db.job.runNow, [p.id]);
  return rows[0] ? rowToJob(rows[0]) : null;
}

export async function replay(db: JobDb, p: { id: string }) {
  const rows = await queryRows<JobRow>(db.pool, db.job.replay, [p.id]);
  return rows[0] ? rowToJob(rows[0]) : null;
}

export async function cancel(db: JobDb & Pick<ExecutorStatements, 'schemaName'>, p: { id: string }) {
  const rows = await queryRows<JobRow>(db.pool, db.job.cancel, [p.id, cancelChannelFor(db.schemaName)]);
  return rows[0] ? rowToJob(rows[0]) : null;
}

export async function replayDeadLetters(db: JobDb, p: { limit: number; queue?: string | undefined; tenantId?: string | undefined }) {
  const rows = await queryRows<JobSummaryRow>(db.pool, db.job.replayDeadLetters, [p.limit, p.queue ?? null, p.tenantId ?? null]);
  return rows.map(rowToSummary).sort((a, b) => compareIds(a.id, b.id));
}

export function countsByQueue(db: Pick<ExecutorStatements, 'pool' | 'read'>, p: { queue?: string | undefined }) {
  const one = p.queue !== undefined;
  return queryRows<{ queue: string; state: JobState; n: number }>(db.pool, db.read.countsByQueue(one), one ? [p.queue] : []);
}

export async function queuePause(db: QueueDb, p: { queue: string }): Promise<Date | null> {
  const rows = await queryRows<{ paused_at: Date }>(db.pool, db.queue.pause, [p.queue]);
  return rows[0]?.paused_at ?? null;
}

export async function queueResume(db: QueueDb, p: { queue: string }): Promise<{ wasPaused: boolean } | null> {
  const rows = await queryRows<{ paused_at: Date | null }>(db.pool, db.queue.resume, [p.queue]);
  return rows[0] ? { wasPaused: rows[0].paused_at !== null } : null;
}

export async function queueListPaused(db: QueueDb): Promise<PausedQueue[]> {
  const rows = await queryRows<{ queue: string; paused_at: Date }>(db.pool, db.queue.listPaused, []);
  return rows.map((r) => ({ queue: r.queue, pausedAt: r.paused_at }));
}

export async function statsSnapshot(db: Pick<ExecutorStatements, 'pool' | 'stats'>, p: { windowSeconds: number }): Promise<StatsRow> {
  const [r] = await queryRows<{
    at: Date;
    counts: Array<[string, JobState, number]>;
    paused: Array<[string, string]>;
    scheduled: Array<[string, number]>;
    succeeded: number;
    dead_lettered: number;
    cancelled: number;
    latency_n: number;
    latency_p50: number | null;
    latency_p95: number | null;
    latency_max: number | null;
  }>(db.pool, db.stats.snapshot, [p.windowSeconds]);
  if (!r) throw translatePgError(new Error('stats snapshot returned no row'));
  return {
    at: r.at,
    counts: r.counts.map(([queue, state, n]) => ({ queue, state, n })),
    paused: r.paused.map(([queue, at]) => ({ queue, pausedAt: new Date(at) })),
    scheduled: r.scheduled.map(([queue, n]) => ({ queue, n })),
    succeeded: r.succeeded,
    deadLettered: r.dead_lettered,
    cancelled: r.cancelled,
    latency: { count: r.latency_n, p50: r.latency_p50, p95: r.latency_p95, max: r.latency_max },
  };
}
