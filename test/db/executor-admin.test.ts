// Conformance of the admin reads and writes (get, list, count, replay, cancel, dead-letter
// replay, counts by queue, workers), through baton.admin and called on the executor directly.

import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { type Job, type JobState, LIST_INLINE_MAX_BYTES } from '../../src/types/job.ts';
import { insertJob, insertJobs, insertWorker, workerRow } from '../helpers/factory.ts';
import { takeLeaderLease } from '../helpers/leader.ts';
import { attemptError, baton, claim, ex, expectBatonError, fresh, row, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();

describe('admin', () => {
  it('getJob: unknown id -> JOB_NOT_FOUND, malformed id -> INVALID_ARGUMENT', async () => {
    await expectBatonError(baton.admin.getJob('999999999'), 'JOB_NOT_FOUND');
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999'])
      await expectBatonError(baton.admin.getJob(bad), 'INVALID_ARGUMENT');
    const id = await insertJob(db.pool, { queue: fresh() });
    expect((await baton.admin.getJob(id)).id).toBe(id);
  });

  it('replay: conflict unless terminal; resets the attempt budget and counts replays', async () => {
    const queue = fresh();
    for (const state of ['pending', 'leased', 'running'] as const) {
      const id = await insertJob(db.pool, { queue, state });
      const before = await row(id);
      const err = await expectBatonError(baton.admin.replay(id), 'JOB_STATE_CONFLICT');
      expect(err.details).toMatchObject({ id, state });
      expect(await row(id)).toEqual(before);
    }
    await expectBatonError(baton.admin.replay('999999999'), 'JOB_NOT_FOUND');

    const dead = await insertJob(db.pool, {
      queue,
      state: 'dead_lettered',
      attempt: 5,
      maxAttempts: 5,
      replayCount: 2,
      errors: [{ attempt: 5 }],
    });
    const job = await baton.admin.replay(dead);
    expect(job).toMatchObject({ id: dead, state: 'pending', attempt: 0, replayCount: 3 });
    const r = await row(dead);
    expect(r).toMatchObject({
      state: 'pending',
      attempt: 0,
      replay_count: 3,
      dead_letter_reason: null,
      finished_at: null,
      started_at: null,
      errors: [{ attempt: 5 }],
    });
    expect(r.run_at).toEqual(r.updated_at);
    await expectBatonError(baton.admin.replay(dead), 'JOB_STATE_CONFLICT'); // now pending

    for (const state of ['succeeded', 'cancelled'] as const) {
      const id = await insertJob(db.pool, { queue, state, result: state === 'succeeded' ? { ok: 1 } : undefined });
      expect(await baton.admin.replay(id)).toMatchObject({ state: 'pending', replayCount: 1 });
      expect(await row(id)).toMatchObject({ result: null, finished_at: null });
    }
  });

  it('cancel: a pending job at once; a leased or running one gets a request; a finished one is a conflict', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue });
    expect(await baton.admin.cancel(id)).toMatchObject({ id, state: 'cancelled', cancelRequestedAt: null });
    const r = await row(id);
    expect(r.state).toBe('cancelled');
    expect(r.finished_at).toEqual(r.updated_at);
    await expectBatonError(baton.admin.cancel(id), 'JOB_STATE_CONFLICT');
    for (const state of ['leased', 'running'] as const) {
      const live = await insertJob(db.pool, { queue, state });
      const job = await baton.admin.cancel(live);
      expect(job).toMatchObject({ id: live, state });
      expect(job.cancelRequestedAt).toBeInstanceOf(Date);
    }
    for (const state of ['succeeded', 'dead_lettered'] as const) {
      const other = await insertJob(db.pool, { queue, state });
      const before = await row(other);
      await expectBatonError(baton.admin.cancel(other), 'JOB_STATE_CONFLICT');
      expect(await row(other)).toEqual(before);
    }
    await expectBatonError(baton.admin.cancel('999999999'), 'JOB_NOT_FOUND');
    // A cancelled job is never claimed.
    expect(await claim(queue, 10)).toEqual([]);
  });

  it('replayDeadLetters: capped page, oldest first, filtered by queue', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 5, { queue, state: 'dead_lettered', attempt: 3, maxAttempts: 3 });
    const elsewhere = await insertJob(db.pool, { queue: fresh(), state: 'dead_lettered' });
    const page = await baton.admin.replayDeadLetters({ limit: 2, queue });
    expect(page.map((j) => j.id)).toEqual(ids.slice(0, 2));
    expect(page.every((j) => j.state === 'pending' && j.attempt === 0 && j.replayCount === 1)).toBe(true);
    const left = await db.query(`SELECT id::text FROM baton.jobs WHERE queue = $1 AND state = 'dead_lettered' ORDER BY id`, [queue]);
    expect(left.rows.map((r) => r.id)).toEqual(ids.slice(2));
    expect((await row(elsewhere)).state).toBe('dead_lettered');
    for (const limit of [0, 1_001, 2.5]) await expectBatonError(baton.admin.replayDeadLetters({ limit, queue }), 'INVALID_ARGUMENT');
  });

  it('listJobs: filters, paging, newest first, and validation', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 5, (i) => ({ queue, tenantId: i < 3 ? 't-list' : 't-other', jobType: i % 2 ? 'odd' : 'even' }));
    await insertJob(db.pool, { queue, state: 'succeeded', tenantId: 't-list' });

    const all = await baton.admin.listJobs({ queue, state: 'pending' });
    expect(all).toMatchObject({ total: 5, limit: 50, offset: 0 });
    expect(all.jobs.map((j) => j.id)).toEqual([...ids].reverse());

    const p1 = await baton.admin.listJobs({ queue, state: 'pending', limit: 2 });
    const p2 = await baton.admin.listJobs({ queue, state: 'pending', limit: 2, offset: 2 });
    expect([...p1.jobs, ...p2.jobs].map((j) => j.id)).toEqual([ids[4], ids[3], ids[2], ids[1]]);
    expect(p2.total).toBe(5);

    const tenant = await baton.admin.listJobs({ queue, tenantId: 't-list', state: 'pending' });
    expect(tenant.jobs.map((j) => j.id)).toEqual([ids[2], ids[1], ids[0]]);
    const odd = await baton.admin.listJobs({ queue, jobType: 'odd' });
    expect(odd.jobs.map((j) => j.id)).toEqual([ids[3], ids[1]]);
    expect((await baton.admin.listJobs({ queue, state: 'succeeded' })).total).toBe(1);

    for (const bad of [{ state: 'bogus' }, { limit: 0 }, { limit: 501 }, { limit: 1.5 }, { offset: -1 }]) {
      await expectBatonError(baton.admin.listJobs(bad as never), 'INVALID_ARGUMENT');
    }
  });

  it('queueDepth and queues: counts by state, zeros included', async () => {
    const queue = fresh();
    await insertJobs(db.pool, 2, { queue });
    await insertJob(db.pool, { queue, state: 'running' });
    // Finished jobs are counted by the statements that finish them.
    await baton.admin.cancel(await insertJob(db.pool, { queue }));
    const depth = await baton.admin.queueDepth(queue);
    expect(depth).toEqual({ pending: 2, waiting: 0, leased: 0, running: 1, succeeded: 0, dead_lettered: 0, cancelled: 1 });
    expect(await baton.admin.queueDepth(fresh())).toEqual({
      pending: 0,
      waiting: 0,
      leased: 0,
      running: 0,
      succeeded: 0,
      dead_lettered: 0,
      cancelled: 0,
    });
    const queues = await baton.admin.queues();
    expect(queues.find((q) => q.queue === queue)?.counts).toEqual(depth);
  });

  it('finished counts follow completes (one shard per session), failures, releases, replays and purges', async () => {
    const queue = fresh();
    const other = fresh();
    await insertJobs(db.pool, 3, { queue });
    await insertJobs(db.pool, 1, { queue: other });
    const leases = [...(await claim(queue, 3)), ...(await claim(other, 1))];
    // One statement over two queues, and a second one on another connection (another shard).
    const done = (js: typeof leases) => js.map((j) => ({ id: j.id, token: j.token, result: null }));
    await ex.jobCompleteMany({ items: done(leases.slice(0, 2)) });
    const pool = new pg.Pool({ connectionString: db.url, max: 1 });
    try {
      await new PgExecutor(pool, quoteSchema(db.schema)).jobCompleteMany({ items: done(leases.slice(2)) });
    } finally {
      await pool.end();
    }
    // A fenced-off complete counts nothing.
    await ex.jobCompleteMany({ items: done(leases.slice(0, 1)) });
    expect((await baton.admin.queueDepth(queue)).succeeded).toBe(3);
    expect((await baton.admin.queueDepth(other)).succeeded).toBe(1);

    await baton.admin.replay(leases[0]!.id);
    expect(await baton.admin.queueDepth(queue)).toMatchObject({ pending: 1, succeeded: 2 });

    // Dead letters: a terminal failure and a spent budget at release, then replayed in bulk.
    await insertJobs(db.pool, 1, { queue });
    const [f, r] = await claim(queue, 2);
    await ex.jobFailMany({
      items: [{ id: f!.id, token: f!.token, error: attemptError(f!.attempt, f!.token), terminal: true }],
      backoffBaseMs: 10,
      backoffCapMs: 10,
    });
    await db.query('UPDATE baton.jobs SET max_attempts = 1 WHERE id = $1', [r!.id]);
    await ex.jobReleaseMany({ leases: [{ id: r!.id, token: r!.token }], refundAttempt: false });
    expect(await baton.admin.queueDepth(queue)).toMatchObject({ pending: 0, running: 0, dead_lettered: 2 });
    await baton.admin.replayDeadLetters({ queue });
    expect(await baton.admin.queueDepth(queue)).toMatchObject({ pending: 2, dead_lettered: 0, succeeded: 2 });

    // Retention walks every job in id order up to the first one created within the age.
    await db.query(`UPDATE baton.jobs SET created_at = now() - interval '3 hours'`);
    await db.query(`UPDATE baton.jobs SET finished_at = now() - interval '2 hours' WHERE queue = ANY ($1) AND state = 'succeeded'`, [
      [queue, other],
    ]);
    const epoch = await takeLeaderLease(db.pool);
    await ex.jobPurgeScan({ after: '0', read: 1_000, ages: { succeeded: 3_600_000, cancelled: null, dead_lettered: null }, epoch });
    expect((await baton.admin.queueDepth(queue)).succeeded).toBe(0);
    // A queue whose every job is gone is no longer listed.
    expect((await baton.admin.queues()).map((q) => q.queue)).not.toContain(other);
  });
});

/** An id no row has (int8's largest: the identity never gets there). */
const NO_SUCH_ID = '9223372036854775807';

/** A conditional write refused: for a row in each of `states`, and for NO_SUCH_ID, null and nothing written. */
async function expectRefused(queue: string, states: readonly JobState[], write: (id: string) => Promise<Job | null>): Promise<void> {
  for (const state of states) {
    const id = await insertJob(db.pool, { queue, state });
    const before = await row(id);
    expect(await write(id), `a ${state} job`).toBeNull();
    expect(await row(id)).toEqual(before);
  }
  expect(await write(NO_SUCH_ID)).toBeNull();
}

describe('admin queries, called on the executor', () => {
  it('jobGet: the row as a job of its state, and null for an id no row has', async () => {
    const queue = fresh();
    const err = {
      attempt: 2,
      token: '7',
      kind: 'transient',
      name: 'Error',
      message: 'boom',
      stack: 'Error: boom',
      at: '2026-01-01T00:00:00.000Z',
    };
    const dead = await insertJob(db.pool, {
      queue,
      state: 'dead_lettered',
      tenantId: 't-get',
      jobType: 'get.me',
      payload: { n: 1 },
      priority: 3,
      attempt: 2,
      maxAttempts: 2,
      leaseToken: 7,
      idempotencyKey: `${queue}-k`,
      lastError: err,
      errors: [err],
      deadLetterReason: 'attempts_exhausted',
      replayCount: 1,
    });
    const r = await row(dead);
    expect(await ex.jobGet({ id: dead })).toEqual({
      id: dead,
      tenantId: 't-get',
      queue,
      jobType: 'get.me',
      payload: { n: 1 },
      priority: 3,
      state: 'dead_lettered',
      runAt: r.run_at,
      attempt: 2,
      maxAttempts: 2,
      idempotencyKey: `${queue}-k`,
      replayCount: 1,
      errors: [err],
      lastError: err,
      lastToken: '7',
      reason: 'attempts_exhausted',
      createdAt: r.created_at,
      updatedAt: r.updated_at,
      startedAt: r.started_at,
      finishedAt: r.finished_at,
      trace: null,
      cancelRequestedAt: null,
      progress: null,
    });
    const running = await insertJob(db.pool, { queue, state: 'running', leaseOwner: 'w-get' });
    const rr = await row(running);
    expect(await ex.jobGet({ id: running })).toMatchObject({
      id: running,
      state: 'running',
      token: rr.lease_token,
      leaseOwner: 'w-get',
      leaseExpiresAt: rr.lease_expires_at,
      startedAt: rr.started_at,
    });
    expect(await ex.jobGet({ id: NO_SUCH_ID })).toBeNull();
  });

  it("jobGet with tenantId: the job when it is that tenant's; null for another tenant's, read by the statement itself", async () => {
    const id = await insertJob(db.pool, { queue: fresh(), tenantId: 't-own' });
    expect((await ex.jobGet({ id, tenantId: 't-own' }))?.id).toBe(id);
    expect(await ex.jobGet({ id, tenantId: 't-other' })).toBeNull();
    expect(await ex.jobGet({ id: NO_SUCH_ID, tenantId: 't-own' })).toBeNull();
    // Through the library: the same error as for an id nobody has.
    const other = await expectBatonError(baton.admin.getJob(id, { tenantId: 't-other' }), 'JOB_NOT_FOUND');
    const nobody = await expectBatonError(baton.admin.getJob(NO_SUCH_ID, { tenantId: 't-other' }), 'JOB_NOT_FOUND');
    expect(other.message.replace(id, 'ID')).toBe(nobody.message.replace(NO_SUCH_ID, 'ID'));
  });

  it('jobList: one page of summaries, newest first, filtered on each field given, bulky fields bounded', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 4, (i) => ({
      queue,
      tenantId: i < 2 ? 't-a' : 't-b',
      jobType: i % 2 ? 'odd' : 'even',
      payload: { i },
    }));
    const err = {
      attempt: 1,
      token: '3',
      kind: 'transient',
      name: 'Error',
      message: 'm'.repeat(1_500),
      stack: 'Error: at x',
      at: '2026-01-01T00:00:00.000Z',
    };
    // Random text does not compress: its stored size stays above the inline bound.
    const bulky = { blob: randomBytes(3_000).toString('base64') };
    const big = await insertJob(db.pool, {
      queue,
      tenantId: 't-a',
      jobType: 'even',
      state: 'dead_lettered',
      payload: bulky,
      errors: [err, err],
      lastError: err,
    });

    const page = await ex.jobList({ queue, limit: 10, offset: 0 });
    expect(page.map((j) => j.id)).toEqual([big, ...[...ids].reverse()]);
    const first = await row(ids[0]!);
    expect(page.at(-1)).toMatchObject({
      id: ids[0],
      state: 'pending',
      tenantId: 't-a',
      jobType: 'even',
      payload: { i: 0 },
      attempt: 0,
      lastToken: null,
      runAt: first.run_at,
      createdAt: first.created_at,
      errorCount: 0,
      lastError: null,
    });
    const bytes = (await db.query(`SELECT pg_column_size(payload) AS n FROM baton.jobs WHERE id = $1`, [big])).rows[0].n as number;
    expect(bytes).toBeGreaterThan(LIST_INLINE_MAX_BYTES);
    const summary = page[0]!;
    expect(summary).not.toHaveProperty('payload');
    expect(summary).toMatchObject({
      state: 'dead_lettered',
      payloadBytes: bytes,
      errorCount: 2,
      lastError: { attempt: 1, kind: 'transient', message: 'm'.repeat(1_000) },
    });
    expect(summary.lastError).not.toHaveProperty('stack');

    expect((await ex.jobList({ queue, limit: 2, offset: 1 })).map((j) => j.id)).toEqual([ids[3], ids[2]]);
    const filtered = await ex.jobList({ queue, state: 'pending', tenantId: 't-a', jobType: 'even', limit: 10, offset: 0 });
    expect(filtered.map((j) => j.id)).toEqual([ids[0]]);
    expect(await ex.jobList({ queue: fresh(), limit: 10, offset: 0 })).toEqual([]);
  });

  it('jobCountCapped: the rows matching the filter, never more than the cap', async () => {
    const queue = fresh();
    await insertJobs(db.pool, 5, (i) => ({ queue, tenantId: i < 3 ? 't-a' : 't-b', jobType: 'count.me' }));
    await insertJob(db.pool, { queue, tenantId: 't-a', state: 'succeeded' });
    expect(await ex.jobCountCapped({ queue, cap: 100 })).toBe(6);
    expect(await ex.jobCountCapped({ queue, state: 'pending', cap: 100 })).toBe(5);
    expect(await ex.jobCountCapped({ queue, tenantId: 't-a', state: 'pending', cap: 100 })).toBe(3);
    expect(await ex.jobCountCapped({ queue, jobType: 'count.me', cap: 100 })).toBe(5);
    expect(await ex.jobCountCapped({ queue, cap: 4 })).toBe(4);
    expect(await ex.jobCountCapped({ queue: fresh(), cap: 100 })).toBe(0);
  });

  it('jobReplay: a finished row back to pending with a fresh budget, due now; otherwise null and nothing written', async () => {
    const queue = fresh();
    for (const state of ['dead_lettered', 'succeeded', 'cancelled'] as const) {
      const id = await insertJob(db.pool, {
        queue,
        state,
        attempt: 3,
        maxAttempts: 3,
        replayCount: 1,
        leaseToken: 5,
        errors: [{ attempt: 3 }],
        runAt: { inMs: -60_000 },
        result: state === 'succeeded' ? { ok: 1 } : undefined,
      });
      const job = await ex.jobReplay({ id });
      const r = await row(id);
      expect(r).toMatchObject({
        state: 'pending',
        attempt: 0,
        replay_count: 2,
        dead_letter_reason: null,
        result: null,
        started_at: null,
        finished_at: null,
        lease_token: '5',
        errors: [{ attempt: 3 }],
      });
      expect(r.run_at).toEqual(r.updated_at);
      expect(job).toMatchObject({
        id,
        state: 'pending',
        attempt: 0,
        replayCount: 2,
        lastToken: '5',
        runAt: r.run_at,
        updatedAt: r.updated_at,
      });
    }
    await expectRefused(queue, ['pending', 'leased', 'running'], (id) => ex.jobReplay({ id }));
  });

  it('jobCancel: a pending row (due or not) to cancelled, finished now; a finished or unknown one null and nothing written', async () => {
    const queue = fresh();
    for (const runAt of [{ inMs: 0 }, { inMs: 3_600_000 }]) {
      const id = await insertJob(db.pool, { queue, runAt });
      const before = await row(id);
      const job = await ex.jobCancel({ id });
      const r = await row(id);
      expect(r).toMatchObject({ state: 'cancelled', attempt: 0, run_at: before.run_at, lease_owner: null });
      expect(r.finished_at).toEqual(r.updated_at);
      expect(job).toMatchObject({ id, state: 'cancelled', finishedAt: r.finished_at });
    }
    await expectRefused(queue, ['succeeded', 'dead_lettered', 'cancelled'], (id) => ex.jobCancel({ id }));
  });

  it('jobReplayDeadLetters: the oldest dead letters of the queue and tenant, up to the limit, back to pending', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 4, (i) => ({
      queue,
      tenantId: i === 1 ? 't-other' : 't-dlq',
      state: 'dead_lettered',
      attempt: 2,
      maxAttempts: 2,
    }));
    const elsewhere = await insertJob(db.pool, { queue: fresh(), tenantId: 't-dlq', state: 'dead_lettered' });
    const page = await ex.jobReplayDeadLetters({ limit: 2, queue, tenantId: 't-dlq' });
    expect(page.map((j) => j.id)).toEqual([ids[0], ids[2]]);
    for (const job of page) {
      const r = await row(job.id);
      expect(r).toMatchObject({
        state: 'pending',
        attempt: 0,
        replay_count: 1,
        dead_letter_reason: null,
        finished_at: null,
        started_at: null,
      });
      expect(r.run_at).toEqual(r.updated_at);
      expect(job).toMatchObject({ state: 'pending', attempt: 0, replayCount: 1, runAt: r.run_at });
    }
    const still = async (id: string) => (await row(id)).state;
    expect([await still(ids[1]!), await still(ids[3]!), await still(elsewhere)]).toEqual([
      'dead_lettered',
      'dead_lettered',
      'dead_lettered',
    ]);
    // Without a tenant, the queue's remaining dead letters.
    expect((await ex.jobReplayDeadLetters({ limit: 10, queue })).map((j) => j.id)).toEqual([ids[1], ids[3]]);
    expect(await ex.jobReplayDeadLetters({ limit: 10, queue })).toEqual([]);
  });

  it('jobCountsByQueue: one row per state present, for one queue or for all', async () => {
    const [q1, q2] = [fresh('cq'), fresh('cq')] as [string, string];
    await insertJobs(db.pool, 2, { queue: q1 });
    await insertJob(db.pool, { queue: q1, state: 'running' });
    // A finished job counts once a statement of Baton's finished it.
    await ex.jobCancel({ id: await insertJob(db.pool, { queue: q2 }) });
    const byState = (rows: Array<{ state: string }>) => [...rows].sort((a, b) => a.state.localeCompare(b.state));
    expect(byState(await ex.jobCountsByQueue({ queue: q1 }))).toEqual([
      { queue: q1, state: 'pending', n: 2 },
      { queue: q1, state: 'running', n: 1 },
    ]);
    const all = await ex.jobCountsByQueue({});
    expect(byState(all.filter((r) => r.queue === q1))).toEqual(byState(await ex.jobCountsByQueue({ queue: q1 })));
    expect(all.filter((r) => r.queue === q2)).toEqual([{ queue: q2, state: 'cancelled', n: 1 }]);
    expect(await ex.jobCountsByQueue({ queue: fresh() })).toEqual([]);
  });
});

describe('workers', () => {
  const dbNow = async () => (await db.query<{ t: Date }>('SELECT now() AS t')).rows[0]!.t;

  it('workerTouch: last_seen_at to the database now, in_flight as given, a gone mark cleared; no other row', async () => {
    const id = fresh('w-touch');
    const other = fresh('w-touch');
    await insertWorker(db.pool, id, { inFlight: 1, lastSeenAt: { inMs: -60_000 }, goneSince: { inMs: -30_000 } });
    await insertWorker(db.pool, other, { lastSeenAt: { inMs: -60_000 } });
    const before = await workerRow(db.pool, id);
    const otherBefore = await workerRow(db.pool, other);
    const t0 = await dbNow();
    await ex.workerTouch({ id, inFlight: 7 });
    const t1 = await dbNow();
    const w = await workerRow(db.pool, id);
    expect(w).toEqual({ ...before, in_flight: 7, gone_since: null, last_seen_at: w!.last_seen_at });
    expect(w!.last_seen_at >= t0 && w!.last_seen_at <= t1).toBe(true);
    expect(await workerRow(db.pool, other)).toEqual(otherBefore);
    // An unknown worker is not created: presence registers workers, touch only renews them.
    const unknown = fresh('w-unknown');
    await ex.workerTouch({ id: unknown, inFlight: 1 });
    expect(await workerRow(db.pool, unknown)).toBeUndefined();
  });

  it('workerList: every worker row as a WorkerRow, oldest started first, alive while not seen gone', async () => {
    const [old, gone, young] = [fresh('w-list'), fresh('w-list'), fresh('w-list')] as [string, string, string];
    await insertWorker(db.pool, young, { startedAt: { inMs: -1_000 }, queues: { mail: 2 } });
    await insertWorker(db.pool, old, {
      startedAt: { inMs: -3_000 },
      hostname: 'h-old',
      pid: 42,
      inFlight: 3,
      queues: { a: 1, b: 4 },
      jobTypes: ['x'],
    });
    // A leader whose session has gone is listed as gone, not as the leader.
    await insertWorker(db.pool, gone, { startedAt: { inMs: -2_000 }, goneSince: { inMs: -500 } });
    await takeLeaderLease(db.pool, { holder: gone });
    const mine = (await ex.workerList()).filter((w) => [old, gone, young].includes(w.id));
    expect(mine.map((w) => [w.id, w.alive])).toEqual([
      [old, true],
      [gone, false],
      [young, true],
    ]);
    const r = (await workerRow(db.pool, old))!;
    expect(mine[0]).toEqual({
      id: old,
      hostname: 'h-old',
      pid: 42,
      queues: { a: 1, b: 4 },
      jobTypes: ['x'],
      inFlight: 3,
      startedAt: r.started_at,
      lastSeenAt: r.last_seen_at,
      alive: true,
      leader: false,
    });
    expect(mine[1]).toMatchObject({ id: gone, alive: false, leader: false });
    // The leader is the holder of the live leader lease, and only while it is live.
    const chosen = fresh('w-list');
    await insertWorker(db.pool, chosen);
    await takeLeaderLease(db.pool, { holder: chosen });
    expect((await ex.workerList()).find((w) => w.id === chosen)).toMatchObject({ alive: true, leader: true });
    await db.query('UPDATE baton.leader_lease SET expires_at = now()');
    expect((await ex.workerList()).find((w) => w.id === chosen)).toMatchObject({ alive: true, leader: false });
  });

  it('workerListLive: the queues and job types of workers not seen gone, and nothing of gone ones', async () => {
    const [live, gone] = [fresh('w-live'), fresh('w-live')] as [string, string];
    await insertWorker(db.pool, live, { queues: { [`${live}-q`]: 2 }, jobTypes: ['a', 'b'] });
    await insertWorker(db.pool, gone, { queues: { [`${gone}-q`]: 1 }, jobTypes: ['c'], goneSince: { inMs: -500 } });
    const all = await ex.workerListLive();
    expect(all).toContainEqual({ queues: [`${live}-q`], jobTypes: ['a', 'b'] });
    expect(all.some((w) => w.queues.includes(`${gone}-q`))).toBe(false);
  });
});
