// The enqueue of jobs that depend on others (dependsOn), in one transaction: lock the parents,
// refuse unknown ones (INVALID_ARGUMENT, nothing written), insert each job waiting on the
// parents that have not succeeded, and release at once the edges of parents that had already
// failed. Jobs without dependsOn never come here (the plain insert is one statement).

import type { JobInsertManyParams, NewJob } from '../../driver/executor.ts';
import { BatonError } from '../../types/errors.ts';
import type { InsertedJob } from '../../types/job.ts';
import { translatePgError } from './errors.ts';
import { checkOut, type PgPoolLike, type Queryable } from './pool.ts';
import type { DependencyQueries } from './queries/dependency.ts';
import type { JobQueries } from './queries/job.ts';
import { type JobRow, rowToJob } from './rows.ts';

const FAILED = new Set(['dead_lettered', 'cancelled']);

export interface DependentInsertDeps {
  pool: PgPoolLike;
  dep: DependencyQueries;
  job: JobQueries;
  /** The NOTIFY channel of a queue (what the queue's workers listen on). */
  channelOf: (queue: string) => string;
}

/** Inserts `p.jobs` (some with dependsOn) in input order; in `p.client`'s transaction when given. */
export async function insertWithDependencies(d: DependentInsertDeps, p: JobInsertManyParams): Promise<InsertedJob[]> {
  if (p.client) {
    const out = await insertAll(d, p.jobs, p.client);
    if (p.notify?.length) await q(p.client, d.job.notify, [p.notify]);
    return out;
  }
  const conn = await checkOut(d.pool).catch((err: unknown) => {
    throw translatePgError(err);
  });
  let broken = false;
  try {
    await q(conn.client, { text: 'BEGIN' }, []);
    let out: InsertedJob[];
    try {
      out = await insertAll(d, p.jobs, conn.client);
      await q(conn.client, { text: 'COMMIT' }, []);
    } catch (err) {
      await conn.client.query({ text: 'ROLLBACK' }).catch(() => {
        broken = true;
      });
      throw err;
    }
    if (p.notifyAfter) {
      await q(conn.client, d.job.notify, [p.notifyAfter.channels]).catch((err: unknown) => p.notifyAfter?.onError(err));
    }
    return out;
  } catch (err) {
    broken ||= isBatonErrorCode(err, 'DB_UNAVAILABLE');
    throw err;
  } finally {
    conn.release(broken);
  }
}

async function insertAll(d: DependentInsertDeps, jobs: NewJob[], c: Queryable): Promise<InsertedJob[]> {
  const out: InsertedJob[] = [];
  for (const [i, j] of jobs.entries()) out.push(await insertOne(d, j, c, jobs.length > 1 ? i : undefined));
  return out;
}

async function insertOne(d: DependentInsertDeps, j: NewJob, c: Queryable, index: number | undefined): Promise<InsertedJob> {
  const parents = j.dependsOn ?? [];
  const found = new Map((await q<{ id: string; state: string }>(c, d.dep.lockParents, [parents, j.tenantId])).map((r) => [r.id, r.state]));
  const unknown = parents.filter((id) => !found.has(id));
  if (unknown.length > 0) {
    const where = index === undefined ? '' : `jobs[${index}].`;
    throw new BatonError(
      'INVALID_ARGUMENT',
      `invalid job: ${where}dependsOn: unknown job ids ${unknown.join(', ')} (in tenant "${j.tenantId}")`,
      {
        details: { field: `${where}dependsOn`, unknown },
      },
    );
  }
  const open = parents.filter((id) => found.get(id) !== 'succeeded');
  const rows = await q<JobRow>(c, d.dep.insert, [
    j.tenantId,
    j.queue,
    j.jobType,
    JSON.stringify(j.payload ?? null),
    j.priority,
    j.runAt,
    j.delayMs,
    j.maxAttempts,
    j.idempotencyKey,
    j.traceContext === null ? null : JSON.stringify(j.traceContext),
    open,
    parents.length > 0 ? parents : null,
    j.onParentFailure ?? 'cancel',
    d.channelOf(j.queue),
    j.concurrencyKey ?? null,
    j.concurrencyLimit ?? null,
  ]);
  const row = rows[0];
  if (!row) {
    const dup = await q<JobRow>(c, d.job.selectByKeys, [[j.tenantId], [j.idempotencyKey]]);
    if (!dup[0]) throw translatePgError(new Error(`idempotent job ${j.idempotencyKey} vanished during enqueue`));
    return { job: rowToJob(dup[0]), created: false };
  }
  const failed = open.filter((id) => FAILED.has(found.get(id) ?? ''));
  if (failed.length === 0) return { job: rowToJob(row), created: true };
  await q(c, d.dep.releaseFinished, [failed, failed.map((id) => found.get(id))]);
  const after = await q<JobRow>(c, d.job.get, [row.id]);
  return { job: rowToJob(after[0] ?? row), created: true };
}

async function q<R>(c: Queryable, query: { name?: string; text: string }, values: unknown[]): Promise<R[]> {
  try {
    return (await c.query<R>({ ...query, values })).rows;
  } catch (err) {
    throw translatePgError(err);
  }
}

function isBatonErrorCode(err: unknown, code: string): boolean {
  return err instanceof BatonError && err.code === code;
}
