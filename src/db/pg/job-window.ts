// Debounce and throttle by key (migration 0035): one enqueue under the lock of its key's row,
// which creates a job, folds into the key's pending job, or drops. Every enqueue of one key runs
// after the previous one committed, so a key never has two pending jobs of a trailing debounce,
// and a claim racing a fold either takes the job before it (the fold then creates a new job) or
// after it (with the folded payload): both lock the job's row.

import type { NewJob, WindowCursor, WindowSweepResult } from '../../driver/executor.ts';
import type { EnqueueWindow, InsertedJob, Job } from '../../types/job.ts';
import type { ExecutorStatements } from './executor-statements.ts';
import type { Queryable } from './pool.ts';
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

/** In `client`'s transaction when given (the key stays locked until the caller commits), else in one of its own. */
export function enqueueWindowed(db: WindowDb, p: { job: WindowedJob; client?: Queryable }): Promise<InsertedJob> {
  return p.client ? windowed(db, p.client, p.job) : inTransaction(db.pool, (c) => windowed(db, c, p.job));
}

async function windowed(db: WindowDb, on: Queryable, job: WindowedJob): Promise<InsertedJob> {
  const w = job.window;
  const kind = w.kind === 'debounce' ? w.mode : 'throttle';
  const [row] = await queryRows<WindowRow>(on, db.window.lock, [job.tenantId, job.queue, w.key, kind]);
  if (!row) throw new Error('job_window_lock returned no row');
  const now = row.now.getTime();
  const held = row.kind === kind && row.job_id !== null ? { id: row.job_id, opened: ms(row.opened_at), until: ms(row.until_at) } : null;
  const rule = JSON.stringify(w);
  const write = (jobId: string, opened: number, until: number, started: number) =>
    queryRows(on, db.window.write, [job.tenantId, job.queue, w.key, kind, jobId, new Date(opened), new Date(until), started, rule]);
  // The answer carries the rule, as a read of the job joins it.
  const toJob = (r: JobRow): Job => rowToJob({ ...r, enqueue_window: w });
  const create = async (runAt: number): Promise<Job> => {
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
    return toJob(r);
  };
  const read = async (id: string): Promise<Job | null> => {
    const [r] = await queryRows<JobRow>(on, db.job.get, [id]);
    return r ? rowToJob(r) : null;
  };

  if (w.kind === 'debounce' && w.mode === 'trailing') {
    // The window's end: windowMs after this enqueue, but never past maxWaitMs after the first.
    const end = (opened: number) => Math.max(now, Math.min(now + w.windowMs, w.maxWaitMs === null ? Infinity : opened + w.maxWaitMs));
    if (held) {
      const runAt = end(held.opened);
      const [folded] = await queryRows<JobRow>(on, db.window.fold, [
        held.id,
        JSON.stringify(job.payload ?? null),
        job.traceContext ? JSON.stringify(job.traceContext) : null,
        new Date(runAt),
      ]);
      if (folded) {
        await write(held.id, held.opened, runAt, 0);
        return { job: toJob(folded), created: false, collapsedBy: 'debounce' };
      }
    }
    // No pending unclaimed job: this enqueue opens a new burst.
    const created = await create(end(now));
    await write(created.id, now, created.runAt.getTime(), 0);
    return { job: created, created: true };
  }

  // Leading and throttle run a created job as its spec says (at once by default).
  const runAt = job.runAt !== null ? Date.parse(job.runAt) : now + (job.delayMs ?? 0);
  if (w.kind === 'debounce') {
    // Each dropped enqueue pushes the window's end: the burst is over after windowMs of quiet,
    // or maxWaitMs after the job that opened it.
    const open = held !== null && now < held.until && (w.maxWaitMs === null || now < held.opened + w.maxWaitMs);
    const kept = open ? await read(held.id) : null;
    if (held && kept) {
      await write(held.id, held.opened, now + w.windowMs, row.started);
      return { job: kept, created: false, collapsedBy: 'debounce' };
    }
    const created = await create(runAt);
    await write(created.id, now, now + w.windowMs, 1);
    return { job: created, created: true };
  }

  // Throttle: a fixed window from the enqueue that created its first job. A dropped enqueue
  // writes nothing. A held job already deleted (retention shorter than the window) cannot
  // answer a drop: a job is created instead.
  const open = held !== null && now < held.until;
  const started = open ? row.started : 0;
  const kept = open && started >= w.limit ? await read(held.id) : null;
  if (kept) return { job: kept, created: false, collapsedBy: 'throttle' };
  const created = await create(runAt);
  await write(created.id, open && held ? held.opened : now, open && held ? held.until : now + w.windowMs, started + 1);
  return { job: created, created: true };
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
