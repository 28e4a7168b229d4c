// Debounce and throttle by key (migration 0035): one enqueue under the lock of its key's row,
// which creates a job, folds into the key's pending job, or drops (underKeyLock; a workflow
// run's start goes through it too, workflow-window.ts). Every enqueue of one key runs after the
// previous one committed, so a key never has two pending jobs of a trailing debounce, and a
// claim racing a fold either takes the job before it (the fold then creates a new job) or
// after it (with the folded payload): both lock the job's row.

import type { NewJob, WindowCursor, WindowSweepResult } from '../../driver/executor.ts';
import type { EnqueueWindow, InsertedJob, Job } from '../../types/job.ts';
import type { ExecutorStatements } from './executor-statements.ts';
import type { Queryable } from './pool.ts';
import type { JobWindowQueries } from './queries/job-window.ts';
import { queryRows } from './query-rows.ts';
import { type JobRow, rowToJob } from './rows.ts';
import { inTransaction } from './transaction.ts';

type WindowDb = Pick<ExecutorStatements, 'pool' | 'job' | 'window'>;
type WindowedJob = NewJob & { window: EnqueueWindow };

/** The key's row as the lock statement reads it; job_id null for a key seen for the first time. */
interface WindowRow {
  kind: string;
  job_id: string | null;
  opened_at: Date | null;
  until_at: Date | null;
  started: number;
  now: Date;
}

/**
 * What a windowed enqueue makes, folds into or answers with: a job, or a workflow run and its
 * driving job (workflow-window.ts). Each is found by the id of the job the key's row holds.
 */
export interface WindowTarget<T> {
  /** Creates one due at `runAt` (ms, database clock); answers it and its job's id and run_at. */
  create(runAt: number): Promise<{ jobId: string; runAt: number; value: T }>;
  /** Folds this enqueue into the one of job `jobId`, due at `runAt`, if that job is still pending and unclaimed; else null. */
  fold(jobId: string, runAt: number): Promise<T | null>;
  /** The one of job `jobId` as a drop answers it; null when it is gone. */
  read(jobId: string): Promise<T | null>;
}

/** A windowed enqueue's outcome: `value` created, or the key's own (folded into or dropped for). */
export type WindowOutcome<T> = { value: T; created: true } | { value: T; created: false; collapsedBy: 'debounce' | 'throttle' };

/** In `client`'s transaction when given (the key stays locked until the caller commits), else in one of its own. */
export function enqueueWindowed(db: WindowDb, p: { job: WindowedJob; client?: Queryable }): Promise<InsertedJob> {
  return p.client ? windowed(db, p.client, p.job) : inTransaction(db.pool, (c) => windowed(db, c, p.job));
}

async function windowed(db: WindowDb, on: Queryable, job: WindowedJob): Promise<InsertedJob> {
  // The answer carries the rule, as a read of the job joins it.
  const toJob = (r: JobRow): Job => rowToJob({ ...r, enqueue_window: job.window });
  const target: WindowTarget<Job> = {
    create: async (runAt) => {
      const [r] = await queryRows<JobRow>(on, db.window.insert, [
        job.tenantId,
        job.queue,
        job.jobType,
        JSON.stringify(job.payload ?? null),
        job.priority,
        new Date(runAt),
        job.maxAttempts,
        job.traceContext ? JSON.stringify(job.traceContext) : null,
        job.concurrencyKey ?? null,
        job.concurrencyLimit ?? null,
      ]);
      if (!r) throw new Error('job_window_insert returned no row');
      const created = toJob(r);
      return { jobId: created.id, runAt: created.runAt.getTime(), value: created };
    },
    fold: async (jobId, runAt) => {
      const [r] = await queryRows<JobRow>(on, db.window.fold, [
        jobId,
        JSON.stringify(job.payload ?? null),
        job.traceContext ? JSON.stringify(job.traceContext) : null,
        new Date(runAt),
      ]);
      return r ? toJob(r) : null;
    },
    read: async (jobId) => {
      const [r] = await queryRows<JobRow>(on, db.job.get, [jobId]);
      return r ? rowToJob(r) : null;
    },
  };
  // Leading and throttle run a created job as its spec says (at once by default).
  const dueAt = (now: number) => (job.runAt !== null ? Date.parse(job.runAt) : now + (job.delayMs ?? 0));
  const out = await underKeyLock(on, db.window, { tenantId: job.tenantId, queue: job.queue, window: job.window, dueAt }, target);
  return out.created ? { job: out.value, created: true } : { job: out.value, created: false, collapsedBy: out.collapsedBy };
}

/**
 * One windowed enqueue on `on` (a transaction: the key's row stays locked until it ends): takes
 * the lock of the key (tenantId, queue, window.key), then creates, folds or drops through
 * `target`, and rewrites the key's row. `dueAt(now)`: when a created leading or throttled one
 * runs, from the database clock read under the lock.
 */
export async function underKeyLock<T>(
  on: Queryable,
  q: JobWindowQueries,
  key: { tenantId: string; queue: string; window: EnqueueWindow; dueAt: (now: number) => number },
  target: WindowTarget<T>,
): Promise<WindowOutcome<T>> {
  const w = key.window;
  const kind = w.kind === 'debounce' ? w.mode : 'throttle';
  const [row] = await queryRows<WindowRow>(on, q.lock, [key.tenantId, key.queue, w.key, kind]);
  if (!row) throw new Error('job_window_lock returned no row');
  const now = row.now.getTime();
  const held = row.kind === kind && row.job_id !== null ? { id: row.job_id, opened: ms(row.opened_at), until: ms(row.until_at) } : null;
  const rule = JSON.stringify(w);
  const write = (jobId: string, opened: number, until: number, started: number) =>
    queryRows(on, q.write, [key.tenantId, key.queue, w.key, kind, jobId, new Date(opened), new Date(until), started, rule]);

  if (w.kind === 'debounce' && w.mode === 'trailing') {
    // The window's end: windowMs after this enqueue, but never past maxWaitMs after the first.
    const end = (opened: number) => Math.max(now, Math.min(now + w.windowMs, w.maxWaitMs === null ? Infinity : opened + w.maxWaitMs));
    if (held) {
      const runAt = end(held.opened);
      const folded = await target.fold(held.id, runAt);
      if (folded !== null) {
        await write(held.id, held.opened, runAt, 0);
        return { value: folded, created: false, collapsedBy: 'debounce' };
      }
    }
    // No pending unclaimed job: this enqueue opens a new burst.
    const created = await target.create(end(now));
    await write(created.jobId, now, created.runAt, 0);
    return { value: created.value, created: true };
  }

  const runAt = key.dueAt(now);
  if (w.kind === 'debounce') {
    // Each dropped enqueue pushes the window's end: the burst is over after windowMs of quiet,
    // or maxWaitMs after the job that opened it.
    const open = held !== null && now < held.until && (w.maxWaitMs === null || now < held.opened + w.maxWaitMs);
    const kept = open ? await target.read(held.id) : null;
    if (held && kept !== null) {
      await write(held.id, held.opened, now + w.windowMs, row.started);
      return { value: kept, created: false, collapsedBy: 'debounce' };
    }
    const created = await target.create(runAt);
    await write(created.jobId, now, now + w.windowMs, 1);
    return { value: created.value, created: true };
  }

  // Throttle: a fixed window from the enqueue that created its first job. A dropped enqueue
  // writes nothing. A held job already deleted (retention shorter than the window) cannot
  // answer a drop: a job is created instead.
  const open = held !== null && now < held.until;
  const started = open ? row.started : 0;
  const kept = open && started >= w.limit ? await target.read(held.id) : null;
  if (kept !== null) return { value: kept, created: false, collapsedBy: 'throttle' };
  const created = await target.create(runAt);
  await write(created.jobId, open && held ? held.opened : now, open && held ? held.until : now + w.windowMs, started + 1);
  return { value: created.value, created: true };
}

const ms = (d: Date | null): number => (d ? d.getTime() : 0);

/**
 * One batch of retention's sweep of job_windows: locks up to `limit` rows whose window has closed,
 * after `after`, then deletes those whose job is no longer pending and unclaimed (fenced by
 * `epoch`). `last` is the cursor to go on from; `done` when the walk reached its end.
 */
export function sweepWindows(
  db: Pick<ExecutorStatements, 'pool' | 'window'>,
  p: { after: WindowCursor | null; limit: number; epoch: string },
): Promise<WindowSweepResult> {
  const a = p.after;
  return inTransaction(db.pool, async (c) => {
    const locked = await queryRows<{ tenant_id: string; queue: string; key: string; until_at: string }>(c, db.window.sweepLock, [
      a ? a.untilAt : '-infinity',
      a ? a.tenantId : '',
      a ? a.queue : '',
      a ? a.key : '',
      p.limit,
    ]);
    const end = locked.at(-1);
    if (!end) return { deleted: 0, last: null, done: true };
    const gone = await queryRows(c, db.window.sweepDelete, [
      p.epoch,
      locked.map((r) => r.tenant_id),
      locked.map((r) => r.queue),
      locked.map((r) => r.key),
    ]);
    const last = { untilAt: end.until_at, tenantId: end.tenant_id, queue: end.queue, key: end.key };
    return { deleted: gone.length, last, done: locked.length < p.limit };
  });
}
