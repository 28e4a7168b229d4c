// The job routes of the HTTP API through the typed client, against a real server
// and the file's own database; assertions read the jobs table, not just responses.

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob, jobRow } from '../helpers/factory.ts';
import { countJobs, errorCode, okJson, useApi } from './harness.ts';

const db = useTestDatabase();
const api = useApi(db);

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
describe('POST /api/jobs', () => {
  it('creates a job (201) and returns it in the wire format', async () => {
    const res = await api.client.api.jobs.$post({
      json: { jobType: 'send-mail', queue: 'mail', tenantId: 'acme', payload: { to: 'a@b.c', n: [1, 2] }, priority: 7, maxAttempts: 3 },
    });
    const job = await okJson(res, 201);
    expect(job).toMatchObject({
      state: 'pending',
      jobType: 'send-mail',
      queue: 'mail',
      tenantId: 'acme',
      payload: { to: 'a@b.c', n: [1, 2] },
      priority: 7,
      maxAttempts: 3,
      attempt: 0,
      replayCount: 0,
      idempotencyKey: null,
      errors: [],
      lastError: null,
      startedAt: null,
    });
    expect(job.id).toMatch(/^\d+$/);
    expect(job.createdAt).toMatch(ISO);
    expect(job.runAt).toMatch(ISO);
    expect(res.headers.get('x-request-id')).toBeTruthy();
    const row = await jobRow(db.pool, job.id);
    expect(row).toMatchObject({ job_type: 'send-mail', queue: 'mail', tenant_id: 'acme', priority: 7, max_attempts: 3, state: 'pending' });
    expect(row!.payload).toEqual({ to: 'a@b.c', n: [1, 2] });
  });

  it('accepts a job nothing can run yet, says why in warnings, and counts it in the metrics', async () => {
    // The harness's engine works no queue: nobody serves 'later'.
    const res = await api.client.api.jobs.$post({ json: { jobType: 'not-deployed', queue: 'later' } });
    const body = await okJson(res, 201);
    expect(body.warnings).toEqual([expect.objectContaining({ code: 'NO_WORKER_FOR_QUEUE', queue: 'later', jobType: 'not-deployed' })]);
    expect((await jobRow(db.pool, body.id))!.state).toBe('pending');
    const batch = await api.client.api.jobs.batch.$post({ json: { jobs: [{ jobType: 'not-deployed', queue: 'later' }] } });
    expect((await okJson(batch)).results[0]!.warnings.map((w) => w.code)).toEqual(['NO_WORKER_FOR_QUEUE']);
    const metrics = await (await api.raw('/metrics')).text();
    expect(metrics).toMatch(/baton_enqueue_warnings_total\{code="NO_WORKER_FOR_QUEUE",queue="later"\} 2/);
  });

  it('returns 200 with the existing job for a duplicate idempotency key, writing nothing', async () => {
    const spec = { jobType: 'charge', idempotencyKey: 'order-42', payload: { amount: 1 } };
    const first = await api.client.api.jobs.$post({ json: spec });
    const a = await okJson(first, 201);
    const before = await countJobs(db);
    const second = await api.client.api.jobs.$post({ json: { ...spec, payload: { amount: 2 } } });
    const b = await okJson(second, 200);
    expect(b.id).toBe(a.id);
    expect(b.payload).toEqual({ amount: 1 });
    expect(await countJobs(db)).toBe(before);
    // The key is scoped per tenant: another tenant gets its own job.
    const other = await api.client.api.jobs.$post({ json: { ...spec, tenantId: 'other' } });
    expect(other.status).toBe(201);
    expect((await okJson(other)).id).not.toBe(a.id);
  });

  it('resolves runAt and delayMs', async () => {
    const runAt = '2031-05-06T07:08:09.000Z';
    const res = await api.client.api.jobs.$post({ json: { jobType: 'later', runAt: '2031-05-06T09:08:09+02:00' } });
    expect(res.status).toBe(201);
    expect((await okJson(res)).runAt).toBe(runAt);
    const delayed = await api.client.api.jobs.$post({ json: { jobType: 'later', delayMs: 60_000 } });
    const job = await okJson(delayed);
    const row = await db.query<{ ahead: boolean }>(`SELECT run_at > now() + interval '50 seconds' AS ahead FROM baton.jobs WHERE id = $1`, [
      job.id,
    ]);
    expect(row.rows[0]!.ahead).toBe(true);
  });
});

describe('POST /api/jobs/batch', () => {
  it('enqueues many in input order (201), then 200 when every job already exists', async () => {
    const jobs = [
      { jobType: 'b1', idempotencyKey: 'batch-1' },
      { jobType: 'b2', idempotencyKey: 'batch-2', queue: 'other' },
      { jobType: 'b3', idempotencyKey: 'batch-3' },
    ];
    const res = await api.client.api.jobs.batch.$post({ json: { jobs } });
    const body = await okJson(res, 201);
    expect(body.results.map((r) => [r.created, r.job.jobType])).toEqual([
      [true, 'b1'],
      [true, 'b2'],
      [true, 'b3'],
    ]);
    expect(await countJobs(db, `idempotency_key LIKE 'batch-%'`)).toBe(3);
    const again = await api.client.api.jobs.batch.$post({ json: { jobs } });
    const body2 = await okJson(again, 200);
    expect(body2.results.every((r) => !r.created)).toBe(true);
    expect(body2.results.map((r) => r.job.id)).toEqual(body.results.map((r) => r.job.id));
    expect(await countJobs(db, `idempotency_key LIKE 'batch-%'`)).toBe(3);
  });
});

describe('job progress', () => {
  it('shows the stored progress in GET /api/jobs/:id and in the listing; null when none was stored', async () => {
    const running = await insertJob(db.pool, { state: 'running', jobType: 'progress-shape' });
    const quiet = await insertJob(db.pool, { state: 'running', jobType: 'progress-shape' });
    // As the holder's fenced write (ctx.progress) leaves it.
    await db.query(`UPDATE baton.jobs SET progress = $2::jsonb WHERE id = $1`, [running, JSON.stringify({ percent: 40, step: 'upload' })]);
    const one = await okJson(api.client.api.jobs[':id'].$get({ param: { id: running } }));
    expect(one.progress).toEqual({ percent: 40, step: 'upload' });
    expect((await okJson(api.client.api.jobs[':id'].$get({ param: { id: quiet } }))).progress).toBeNull();
    const list = await okJson(api.client.api.jobs.$get({ query: { jobType: 'progress-shape' } }));
    const byId = new Map(list.jobs.map((j) => [j.id, j.progress]));
    expect(byId.get(running)).toEqual({ percent: 40, step: 'upload' });
    expect(byId.get(quiet)).toBeNull();
    await db.query(`UPDATE baton.jobs SET progress = '55.5' WHERE id = $1`, [running]);
    expect((await okJson(api.client.api.jobs[':id'].$get({ param: { id: running } }))).progress).toBe(55.5);
  });
});

describe('GET /api/jobs/:id', () => {
  it('returns the job, 404 for an unknown or malformed id', async () => {
    const { warnings: _warnings, ...created } = await okJson(api.client.api.jobs.$post({ json: { jobType: 'get-me' } }));
    const res = await api.client.api.jobs[':id'].$get({ param: { id: created.id } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(created);
    for (const id of ['999999999', 'abc', '0', '-1', '99999999999999999999', '1.5']) {
      const missing = await api.client.api.jobs[':id'].$get({ param: { id } });
      expect(missing.status, id).toBe(404);
      expect(await errorCode(missing)).toBe('JOB_NOT_FOUND');
    }
  });

  it('shows every state in its wire shape', async () => {
    const ids = {
      leased: await insertJob(db.pool, { state: 'leased', jobType: 'shape' }),
      succeeded: await insertJob(db.pool, { state: 'succeeded', jobType: 'shape', result: { ok: true } }),
      dead: await insertJob(db.pool, { state: 'dead_lettered', jobType: 'shape', deadLetterReason: 'poisoned' }),
    };
    const leased = await okJson(api.client.api.jobs[':id'].$get({ param: { id: ids.leased } }));
    expect(leased).toMatchObject({ state: 'leased', leaseOwner: 'test-worker' });
    if (leased.state !== 'leased') throw new Error('unreachable');
    expect(leased.token).toMatch(/^\d+$/);
    expect(leased.leaseExpiresAt).toMatch(ISO);
    const ok = await okJson(api.client.api.jobs[':id'].$get({ param: { id: ids.succeeded } }));
    expect(ok).toMatchObject({ state: 'succeeded', result: { ok: true } });
    const dead = await okJson(api.client.api.jobs[':id'].$get({ param: { id: ids.dead } }));
    expect(dead).toMatchObject({ state: 'dead_lettered', reason: 'poisoned' });
  });
});

describe('GET /api/jobs (list)', () => {
  it('filters by state, tenant, queue and job type, and pages', async () => {
    for (let i = 0; i < 5; i++) {
      await api.client.api.jobs.$post({ json: { jobType: 'listed', queue: 'list-q', tenantId: 't-list', payload: { i } } });
    }
    await insertJob(db.pool, { state: 'cancelled', jobType: 'listed', queue: 'list-q', tenantId: 't-list' });
    const page1 = await api.client.api.jobs.$get({ query: { queue: 'list-q', state: 'pending', limit: '2' } });
    const p1 = await okJson(page1, 200);
    expect(p1.total).toBe(5);
    expect(p1.limit).toBe(2);
    expect(p1.jobs).toHaveLength(2);
    const p3 = await okJson(api.client.api.jobs.$get({ query: { queue: 'list-q', state: 'pending', limit: '2', offset: '4' } }));
    expect(p3.jobs).toHaveLength(1);
    expect(p3.offset).toBe(4);
    // Newest first.
    expect(p1.jobs[0]!.payload).toEqual({ i: 4 });
    const cancelled = await okJson(api.client.api.jobs.$get({ query: { tenantId: 't-list', state: 'cancelled' } }));
    expect(cancelled.jobs.map((j) => j.state)).toEqual(['cancelled']);
    const byType = await okJson(api.client.api.jobs.$get({ query: { jobType: 'listed', tenantId: 't-list' } }));
    expect(byType.total).toBe(6);
    const none = await okJson(api.client.api.jobs.$get({ query: { queue: 'no-such-queue' } }));
    expect(none).toMatchObject({ jobs: [], total: 0 });
  });
});

describe('replay and cancel', () => {
  it('replay: 409 for a live job; a terminal job returns to pending with a fresh budget and replayCount + 1', async () => {
    const pending = await okJson(api.client.api.jobs.$post({ json: { jobType: 'r' } }));
    const conflict = await api.client.api.jobs[':id'].replay.$post({ param: { id: pending.id } });
    expect(conflict.status).toBe(409);
    expect(await errorCode(conflict)).toBe('JOB_STATE_CONFLICT');
    expect(await jobRow(db.pool, pending.id)).toMatchObject({ state: 'pending', replay_count: 0 });

    const dead = await insertJob(db.pool, { state: 'dead_lettered', jobType: 'r', attempt: 5, maxAttempts: 5, replayCount: 2 });
    const res = await api.client.api.jobs[':id'].replay.$post({ param: { id: dead } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: dead, state: 'pending', replayCount: 3 });
    expect(await jobRow(db.pool, dead)).toMatchObject({ state: 'pending', replay_count: 3, attempt: 0, max_attempts: 5 });

    const missing = await api.client.api.jobs[':id'].replay.$post({ param: { id: '987654321' } });
    expect(missing.status).toBe(404);
  });

  it('cancel: a pending job is cancelled (200); cancelling again is 409; a running job gets a request (202), still running', async () => {
    const job = await okJson(api.client.api.jobs.$post({ json: { jobType: 'c' } }));
    const res = await api.client.api.jobs[':id'].cancel.$post({ param: { id: job.id } });
    expect(res.status).toBe(200);
    expect((await okJson(res)).state).toBe('cancelled');
    expect((await jobRow(db.pool, job.id))!.state).toBe('cancelled');
    const again = await api.client.api.jobs[':id'].cancel.$post({ param: { id: job.id } });
    expect(again.status).toBe(409);
    expect(await errorCode(again)).toBe('JOB_STATE_CONFLICT');
    const running = await insertJob(db.pool, { state: 'running', jobType: 'c' });
    const busy = await api.client.api.jobs[':id'].cancel.$post({ param: { id: running } });
    const asked = await okJson(busy, 202);
    expect(asked).toMatchObject({ id: running, state: 'running', cancelRequestedAt: expect.any(String) });
    const r = (await jobRow(db.pool, running))!;
    expect(r.state).toBe('running');
    expect(asked.cancelRequestedAt).toBe(r.cancel_requested_at.toISOString());
    // Asking again changes nothing: the same answer, the first request's time.
    const twice = await api.client.api.jobs[':id'].cancel.$post({ param: { id: running } });
    expect((await okJson(twice, 202)).cancelRequestedAt).toBe(asked.cancelRequestedAt);
    const done = await insertJob(db.pool, { state: 'succeeded', jobType: 'c' });
    expect((await api.client.api.jobs[':id'].cancel.$post({ param: { id: done } })).status).toBe(409);
  });

  it('POST /api/dlq/replay replays at most `limit` dead letters, oldest first', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await insertJob(db.pool, { state: 'dead_lettered', queue: 'dlq-q', jobType: 'd' }));
    const res = await api.client.api.dlq.replay.$post({ query: { limit: '2', queue: 'dlq-q' } });
    const body = await okJson(res, 200);
    expect(body.replayed).toBe(2);
    expect(body.jobs.map((j) => j.id).sort()).toEqual(ids.slice(0, 2).sort());
    expect(await countJobs(db, `queue = 'dlq-q' AND state = 'dead_lettered'`)).toBe(1);
    expect(await countJobs(db, `queue = 'dlq-q' AND state = 'pending' AND replay_count = 1`)).toBe(2);
  });
});
