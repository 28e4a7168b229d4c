// Job dependencies (dependsOn): a job waits until every parent has succeeded; a parent that
// dead-letters or is cancelled cancels its dependents (every level down), naming itself, unless
// they asked to run anyway; unknown parents are refused with nothing written; the release rides
// in the parent's finishing statement, so counts, counters and concurrency stay exact.

import { beforeEach, describe, expect, it } from 'vitest';
import { type Baton, BatonError, TerminalError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { expectCountersMatchRows } from '../workflow/harness.ts';
import { Invocations, row, rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();

/** Whether job `id` no longer exists (deleteOnSuccess deleted it). */
const gone = (baton: Baton, id: string) =>
  baton.admin.getJob(id).then(
    () => false,
    (e: unknown) => (e as BatonError).code === 'JOB_NOT_FOUND',
  );

describe('job dependencies', () => {
  const engines = useEngines(db, () => ({ pollIntervalMs: 50, backoffBaseMs: 1, backoffCapMs: 5 }));
  beforeEach(async () => {
    await db.query('TRUNCATE baton.job_dependencies');
  });

  it('a dependent cancelled while it waited, then replayed, waits again for its unfinished parent', async () => {
    const producer = engines.producer();
    const parent = await producer.enqueue({ jobType: 'gate', queue: 'q' });
    const child = await producer.enqueue({ jobType: 'after', queue: 'q', dependsOn: [parent.job.id] });
    expect((await producer.admin.cancel(child.job.id)).state).toBe('cancelled');
    const replayed = await producer.admin.replay(child.job.id);
    expect(replayed).toMatchObject({ state: 'waiting', waitingFor: 1 });
    const order: string[] = [];
    await engines.start({
      queues: { q: 2 },
      handlers: {
        gate: () => void order.push('parent'),
        after: () => void order.push('child'),
      },
    });
    await rowInState(db, child.job.id, 'succeeded');
    expect(order).toEqual(['parent', 'child']);
  });

  it('a dependent waits (counted as waiting) until every parent has succeeded, then runs once', async () => {
    const producer = engines.producer();
    const a = await producer.enqueue({ jobType: 'gate', queue: 'q', payload: 'a' });
    const b = await producer.enqueue({ jobType: 'gate', queue: 'q', payload: 'b' });
    const child = await producer.enqueue({ jobType: 'after', queue: 'q', dependsOn: [a.job.id, b.job.id, a.job.id] });
    expect(child.job.state).toBe('waiting');
    expect(child.job).toMatchObject({ waitingFor: 2, dependsOn: [a.job.id, b.job.id] });
    expect((await producer.admin.queueDepth('q')).waiting).toBe(1);
    expect((await producer.admin.listJobs({ state: 'waiting' })).jobs.map((j) => j.id)).toEqual([child.job.id]);

    const order: string[] = [];
    const gateB = engines.gate();
    const calls = new Invocations();
    await engines.start({
      queues: { q: 4 },
      handlers: {
        gate: async (ctx) => {
          if (ctx.job.payload === 'b') await gateB.promise;
          order.push(String(ctx.job.payload));
        },
        after: async (ctx) => {
          calls.record(ctx);
          order.push('after');
        },
      },
    });
    await rowInState(db, a.job.id, 'succeeded');
    // One parent done: still waiting, for one.
    const mid = await producer.admin.getJob(child.job.id);
    expect(mid).toMatchObject({ state: 'waiting', waitingFor: 1 });
    gateB.resolve();
    await rowInState(db, child.job.id, 'succeeded');
    expect(order).toEqual(['a', 'b', 'after']);
    expect(calls.of(child.job.id)).toBe(1);
    expect((await db.query('SELECT count(*)::int AS n FROM baton.job_dependencies')).rows[0].n).toBe(0);
  });

  it('a parent claimed, failed and retried keeps its dependent waiting until the retry succeeds', async () => {
    const producer = engines.producer();
    const parent = await producer.enqueue({ jobType: 'flaky', queue: 'q', maxAttempts: 3 });
    const child = await producer.enqueue({ jobType: 'after', queue: 'q', dependsOn: [parent.job.id] });
    const retry = engines.gate();
    const order: string[] = [];
    await engines.start({
      queues: { q: 2 },
      handlers: {
        flaky: async (ctx) => {
          order.push(`parent ${ctx.job.attempt}`);
          if (ctx.job.attempt === 1) throw new Error('once');
          await retry.promise;
        },
        after: () => void order.push('child'),
      },
    });
    // The parent's state changed three times (claimed, failed back to pending, claimed again):
    // none of them finished it, so its dependent still waits for it.
    await waitFor(async () => order.includes('parent 2'), { message: 'the parent was retried' });
    expect(await producer.admin.getJob(child.job.id)).toMatchObject({ state: 'waiting', waitingFor: 1 });
    retry.resolve();
    await rowInState(db, child.job.id, 'succeeded');
    expect(order).toEqual(['parent 1', 'parent 2', 'child']);
    await expectCountersMatchRows(db);
  });

  it('a parent that already succeeded counts as done; a deleteOnSuccess parent releases at its delete', async () => {
    const worker = await engines.start({ queues: { q: 2 }, deleteOnSuccess: true, handlers: { p: async () => 1, c: async () => 2 } });
    const done = await worker.enqueue({ jobType: 'p', queue: 'q' });
    await waitFor(async () => gone(worker, done.job.id));
    // Deleted: unknown now, like any id retention removed.
    await expect(worker.enqueue({ jobType: 'c', queue: 'q', dependsOn: [done.job.id] })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });

    const producer = engines.producer();
    const kept = await producer.enqueue({ jobType: 'x', queue: 'other' });
    await db.query(`UPDATE baton.jobs SET state = 'succeeded', finished_at = now() WHERE id = $1`, [kept.job.id]);
    const now = await producer.enqueue({ jobType: 'c', queue: 'q', dependsOn: [kept.job.id] });
    expect(now.job.state).toBe('pending');
    await waitFor(async () => gone(worker, now.job.id), { message: 'the dependent ran' });

    const p = await worker.enqueue({ jobType: 'p', queue: 'q', delayMs: 200 });
    const c = await worker.enqueue({ jobType: 'c', queue: 'q', dependsOn: [p.job.id] });
    expect(c.job.state).toBe('waiting');
    await waitFor(async () => gone(worker, c.job.id), { message: 'the dependent of a deleted parent ran' });
  });

  it('a dead-lettered parent cancels its dependents at every level, naming itself; onParentFailure run runs', async () => {
    const producer = engines.producer();
    const parent = await producer.enqueue({ jobType: 'boom', queue: 'q' });
    const child = await producer.enqueue({ jobType: 'never', queue: 'q', dependsOn: [parent.job.id] });
    const grandchild = await producer.enqueue({ jobType: 'never', queue: 'q', dependsOn: [child.job.id] });
    const tolerant = await producer.enqueue({ jobType: 'anyway', queue: 'q', dependsOn: [parent.job.id], onParentFailure: 'run' });
    const calls = new Invocations();
    await engines.start({
      queues: { q: 2 },
      handlers: {
        boom: async () => {
          throw new TerminalError('no');
        },
        never: async (ctx) => calls.record(ctx),
        anyway: async (ctx) => calls.record(ctx),
      },
    });
    await rowInState(db, parent.job.id, 'dead_lettered');
    const c = await rowInState(db, child.job.id, 'cancelled');
    expect(c.errors.at(-1)).toMatchObject({ kind: 'parent_failed', message: `parent job ${parent.job.id} was dead-lettered` });
    const g = await rowInState(db, grandchild.job.id, 'cancelled');
    expect(g.errors.at(-1)).toMatchObject({ kind: 'parent_failed', message: `parent job ${child.job.id} was cancelled` });
    await rowInState(db, tolerant.job.id, 'succeeded');
    expect(calls.of(child.job.id) + calls.of(grandchild.job.id)).toBe(0);
    expect(calls.of(tolerant.job.id)).toBe(1);
    // The cancelled job reads as cancelled over the API, its last error naming the parent.
    const read = await producer.admin.getJob(child.job.id);
    expect(read?.state).toBe('cancelled');
    expect(read?.lastError?.message).toContain(parent.job.id);
    await expectCountersMatchRows(db);
  });

  it('cancelling a parent cancels its dependents; a waiting job can be cancelled itself', async () => {
    const producer = engines.producer();
    const parent = await producer.enqueue({ jobType: 'p', queue: 'q' });
    const child = await producer.enqueue({ jobType: 'c', queue: 'q', dependsOn: [parent.job.id] });
    const other = await producer.enqueue({ jobType: 'c', queue: 'q', dependsOn: [parent.job.id] });
    await producer.admin.cancel(other.job.id);
    await producer.admin.cancel(parent.job.id);
    expect((await row(db, child.job.id)).state).toBe('cancelled');
    expect((await row(db, other.job.id)).errors).toEqual([]);
    // A dependent enqueued after its parent failed is cancelled at once (or runs, if it asks).
    const late = await producer.enqueue({ jobType: 'c', queue: 'q', dependsOn: [parent.job.id] });
    expect(late.job.state).toBe('cancelled');
    const lateRun = await producer.enqueue({ jobType: 'c', queue: 'q', dependsOn: [parent.job.id], onParentFailure: 'run' });
    expect(lateRun.job.state).toBe('pending');
    await expectCountersMatchRows(db);
  });

  it('unknown parents (or another tenant’s) are refused and nothing is written; duplicates by key answer the first', async () => {
    const producer = engines.producer();
    const mine = await producer.enqueue({ jobType: 'p', queue: 'q', tenantId: 't1' });
    const theirs = await producer.enqueue({ jobType: 'p', queue: 'q', tenantId: 't2' });
    const before = (await db.query('SELECT count(*)::int AS n FROM baton.jobs')).rows[0].n;
    const err = await producer
      .enqueueMany([
        { jobType: 'c', queue: 'q', tenantId: 't1', dependsOn: [mine.job.id] },
        { jobType: 'c', queue: 'q', tenantId: 't1', dependsOn: [mine.job.id, theirs.job.id, '999999999'] },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BatonError);
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', details: { unknown: [theirs.job.id, '999999999'] } });
    expect((await db.query('SELECT count(*)::int AS n FROM baton.jobs')).rows[0].n).toBe(before);
    expect((await row(db, mine.job.id)).state).toBe('pending');
    await expect(producer.enqueue({ jobType: 'c', onParentFailure: 'run' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(producer.enqueue({ jobType: 'c', dependsOn: ['x1'] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });

    const first = await producer.enqueue({ jobType: 'c', queue: 'q', tenantId: 't1', dependsOn: [mine.job.id], idempotencyKey: 'k' });
    const again = await producer.enqueue({ jobType: 'c', queue: 'q', tenantId: 't1', dependsOn: [mine.job.id], idempotencyKey: 'k' });
    expect(again).toMatchObject({ created: false, job: { id: first.job.id, state: 'waiting' } });
    expect((await db.query('SELECT count(*)::int AS n FROM baton.job_dependencies')).rows[0].n).toBe(1);
  });

  it('children of two parents finishing at once on different workers each run exactly once', async () => {
    const producer = engines.producer();
    const n = 60;
    const parents = await producer.enqueueMany(Array.from({ length: 2 * n }, () => ({ jobType: 'p', queue: 'q', delayMs: 300 })));
    const children = await producer.enqueueMany(
      Array.from({ length: n }, (_, i) => ({ jobType: 'c', queue: 'q', dependsOn: [parents[2 * i]!.job.id, parents[2 * i + 1]!.job.id] })),
    );
    const calls = new Invocations();
    const handlers = { p: async () => undefined, c: async (ctx: Parameters<Invocations['record']>[0]) => calls.record(ctx) };
    await Promise.all([1, 2, 3].map(() => engines.start({ queues: { q: 8 }, handlers })));
    await waitFor(async () => calls.total >= n && (await producer.admin.queueDepth('q')).succeeded === 3 * n, {
      timeoutMs: 20_000,
      message: 'every job to succeed',
    });
    expect(calls.duplicates()).toEqual([]);
    expect(children.every((c) => calls.of(c.job.id) === 1)).toBe(true);
    await expectCountersMatchRows(db);
  });
});
