// The enqueue: a batch in one statement (in one transaction of dependencies.ts when a job
// depends on others), answered in input order, each idempotency key with the job that holds it.
// A keyed job's queue is marked flow-controlled before the job exists.

import { channelFor } from '../../driver/channels.ts';
import type { JobInsertManyParams, NewJob } from '../../driver/executor.ts';
import type { InsertedJob } from '../../types/job.ts';
import { insertWithDependencies } from './dependencies.ts';
import { translatePgError } from './errors.ts';
import type { ExecutorStatements } from './executor-statements.ts';
import { canInsertCommitNotify, insertCommitNotify, textArrayLiteral } from './insert-commit-notify.ts';
import { type CheckedOut, checkOut, type Queryable } from './pool.ts';
import { queryRows } from './query-rows.ts';
import { compareIds, type JobRow, rowToJob } from './rows.ts';

type InsertDb = Pick<ExecutorStatements, 'pool' | 'schemaName' | 'job' | 'flow' | 'dependency'>;

/** `keyedQueues`: the queues this executor has marked keyed, kept across calls (flow_queues.keyed is never reset by Baton). */
export async function insertMany(db: InsertDb, keyedQueues: Set<string>, p: JobInsertManyParams): Promise<InsertedJob[]> {
  await markKeyed(db, keyedQueues, p.jobs);
  if (p.jobs.some((j) => j.dependsOn)) {
    return insertWithDependencies({ pool: db.pool, dep: db.dependency, job: db.job, channelOf: (q) => channelFor(db.schemaName, q) }, p);
  }
  const on = p.client ?? db.pool;
  const payload = JSON.stringify(
    p.jobs.map((j) => ({
      tenant_id: j.tenantId,
      queue: j.queue,
      job_type: j.jobType,
      payload: j.payload === undefined ? null : j.payload,
      priority: j.priority,
      run_at: j.runAt,
      delay_ms: j.delayMs,
      max_attempts: j.maxAttempts,
      idempotency_key: j.idempotencyKey,
      trace_context: j.traceContext,
      concurrency_key: j.concurrencyKey ?? null,
      concurrency_limit: j.concurrencyLimit ?? null,
    })),
  );
  const notify = p.notify ?? [];
  const inserted = (
    notify.length > 0
      ? await queryRows<JobRow>(on, db.job.insertManyNotify, [payload, notify])
      : p.notifyAfter && !p.client
        ? await insertThenNotify(db, payload, p.notifyAfter)
        : await queryRows<JobRow>(on, db.job.insertMany, [payload])
  ).map(rowToJob);
  // Inserted rows come back in identity order, which follows input order (ORDER BY ord).
  inserted.sort((a, b) => compareIds(a.id, b.id));
  const key = (tenant: string, k: string) => `${tenant}\u0000${k}`;
  const byKey = new Map<string, InsertedJob>();
  for (const job of inserted) {
    if (job.idempotencyKey !== null) byKey.set(key(job.tenantId, job.idempotencyKey), { job, created: true });
  }
  // Keyed specs that inserted nothing collided with an existing job: read those back
  // (a new statement, so it sees a concurrent duplicate that committed meanwhile).
  const missing = p.jobs.filter((j) => j.idempotencyKey !== null && !byKey.has(key(j.tenantId, j.idempotencyKey)));
  if (missing.length > 0) {
    const rows = await queryRows<JobRow>(on, db.job.selectByKeys, [missing.map((j) => j.tenantId), missing.map((j) => j.idempotencyKey)]);
    for (const job of rows.map(rowToJob)) byKey.set(key(job.tenantId, job.idempotencyKey as string), { job, created: false });
  }
  const unkeyed = inserted.filter((j) => j.idempotencyKey === null);
  let u = 0;
  const out: InsertedJob[] = [];
  const seen = new Set<string>();
  for (const spec of p.jobs) {
    if (spec.idempotencyKey === null) {
      const job = unkeyed[u++];
      if (!job) throw translatePgError(new Error('insert returned fewer rows than expected'));
      out.push({ job, created: true });
      continue;
    }
    const k = key(spec.tenantId, spec.idempotencyKey);
    const found = byKey.get(k);
    if (!found) throw translatePgError(new Error(`idempotent job ${spec.idempotencyKey} vanished during enqueue`));
    // A key repeated inside one batch: only its first occurrence created the job.
    out.push(seen.has(k) ? { job: found.job, created: false } : found);
    seen.add(k);
  }
  return out;
}

/**
 * A keyed job's queue becomes flow-controlled before the job exists, in a commit of its own
 * (so also ahead of a caller's transaction): no FIFO or fair claim ever sees a keyed job.
 */
export async function markKeyed(db: Pick<ExecutorStatements, 'pool' | 'flow'>, keyedQueues: Set<string>, jobs: NewJob[]): Promise<void> {
  const keyed = [...new Set(jobs.filter((j) => j.concurrencyKey != null).map((j) => j.queue))].filter((q) => !keyedQueues.has(q));
  if (keyed.length > 0) {
    await queryRows(db.pool, db.flow.markKeyed, [keyed]);
    for (const q of keyed) keyedQueues.add(q);
  }
}

/**
 * The insert, then its NOTIFY in a transaction of its own that PostgreSQL starts only once the
 * insert has committed (WAL flush included): the insert never holds the global notify lock.
 * On a node-postgres client both go in one round trip that answers after the NOTIFY (see
 * insert-commit-notify.ts); on any other client the NOTIFY follows the insert's reply. Only
 * the insert decides the outcome: a failed NOTIFY goes to `after.onError`.
 */
async function insertThenNotify(
  db: Pick<ExecutorStatements, 'pool' | 'job'>,
  payload: string,
  after: NonNullable<JobInsertManyParams['notifyAfter']>,
): Promise<JobRow[]> {
  let out: CheckedOut;
  try {
    out = await checkOut(db.pool);
  } catch (err) {
    throw translatePgError(err);
  }
  const { client } = out;
  if (canInsertCommitNotify(client)) {
    try {
      const { rows, notifyError } = await insertCommitNotify<JobRow>(
        client,
        { ...db.job.insertMany, values: [payload] },
        { ...db.job.notify, values: [textArrayLiteral(after.channels)] },
      );
      out.release(notifyError !== null);
      if (notifyError) after.onError(translatePgError(notifyError));
      return rows;
    } catch (err) {
      out.release(true);
      throw translatePgError(err);
    }
  }
  const inserted = client.query<JobRow>({ ...db.job.insertMany, values: [payload] });
  const notified = inserted.then(() => client.query({ ...db.job.notify, values: [after.channels] }));
  void Promise.allSettled([inserted, notified]).then(([i, n]) => {
    const errors = [i, n].flatMap((r) => (r.status === 'rejected' ? [translatePgError(r.reason)] : []));
    if (i.status === 'fulfilled' && errors[0]) after.onError(errors[0]);
    out.release(errors.some((e) => e.code === 'DB_UNAVAILABLE'));
  });
  try {
    return (await inserted).rows;
  } catch (err) {
    throw translatePgError(err);
  }
}

export async function notify(db: Pick<ExecutorStatements, 'pool' | 'job'>, p: { channels: string[]; client?: Queryable }): Promise<void> {
  await queryRows(p.client ?? db.pool, db.job.notify, [p.channels]);
}
