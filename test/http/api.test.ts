// Every route of the HTTP API through the typed client, against a real server
// and the file's own database; assertions read the jobs table, not just responses.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBaton, TerminalError, type Baton, type Logger } from '../../src/index.ts';
import { createApp } from '../../src/http/app.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob, jobRow } from '../helpers/factory.ts';
import { waitFor } from '../helpers/wait.ts';
import { countJobs, errorCode, startApi, type ApiHarness } from './harness.ts';

const db = useTestDatabase();
let api: ApiHarness;

beforeAll(async () => {
  api = await startApi(db);
});
afterAll(async () => {
  await api?.close();
});

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('POST /api/jobs', () => {
  it('creates a job (201) and returns it in the wire format', async () => {
    const res = await api.client.api.jobs.$post({
      json: { jobType: 'send-mail', queue: 'mail', tenantId: 'acme', payload: { to: 'a@b.c', n: [1, 2] }, priority: 7, maxAttempts: 3 },
    });
    expect(res.status).toBe(201);
    const job = await res.json();
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

  it('returns 200 with the existing job for a duplicate idempotency key, writing nothing', async () => {
    const spec = { jobType: 'charge', idempotencyKey: 'order-42', payload: { amount: 1 } };
    const first = await api.client.api.jobs.$post({ json: spec });
    expect(first.status).toBe(201);
    const a = await first.json();
    const before = await countJobs(db);
    const second = await api.client.api.jobs.$post({ json: { ...spec, payload: { amount: 2 } } });
    expect(second.status).toBe(200);
    const b = await second.json();
    expect(b.id).toBe(a.id);
    expect(b.payload).toEqual({ amount: 1 });
    expect(await countJobs(db)).toBe(before);
    // The key is scoped per tenant: another tenant gets its own job.
    const other = await api.client.api.jobs.$post({ json: { ...spec, tenantId: 'other' } });
    expect(other.status).toBe(201);
    expect((await other.json()).id).not.toBe(a.id);
  });

  it('resolves runAt and delayMs', async () => {
    const runAt = '2031-05-06T07:08:09.000Z';
    const res = await api.client.api.jobs.$post({ json: { jobType: 'later', runAt: '2031-05-06T09:08:09+02:00' } });
    expect(res.status).toBe(201);
    expect((await res.json()).runAt).toBe(runAt);
    const delayed = await api.client.api.jobs.$post({ json: { jobType: 'later', delayMs: 60_000 } });
    const job = await delayed.json();
    const row = await db.query<{ ahead: boolean }>(
      `SELECT run_at > now() + interval '50 seconds' AS ahead FROM baton.jobs WHERE id = $1`,
      [job.id],
    );
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
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(body.results.map((r) => [r.created, r.job.jobType])).toEqual([
      [true, 'b1'],
      [true, 'b2'],
      [true, 'b3'],
    ]);
    expect(await countJobs(db, `idempotency_key LIKE 'batch-%'`)).toBe(3);
    const again = await api.client.api.jobs.batch.$post({ json: { jobs } });
    expect(again.status).toBe(200);
    const body2 = await again.json();
    expect(body2.results.every((r) => !r.created)).toBe(true);
    expect(body2.results.map((r) => r.job.id)).toEqual(body.results.map((r) => r.job.id));
    expect(await countJobs(db, `idempotency_key LIKE 'batch-%'`)).toBe(3);
  });
});

describe('GET /api/jobs/:id', () => {
  it('returns the job, 404 for an unknown or malformed id', async () => {
    const created = await (await api.client.api.jobs.$post({ json: { jobType: 'get-me' } })).json();
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
    const leased = await (await api.client.api.jobs[':id'].$get({ param: { id: ids.leased } })).json();
    expect(leased).toMatchObject({ state: 'leased', leaseOwner: 'test-worker' });
    if (leased.state !== 'leased') throw new Error('unreachable');
    expect(leased.token).toMatch(/^\d+$/);
    expect(leased.leaseExpiresAt).toMatch(ISO);
    const ok = await (await api.client.api.jobs[':id'].$get({ param: { id: ids.succeeded } })).json();
    expect(ok).toMatchObject({ state: 'succeeded', result: { ok: true } });
    const dead = await (await api.client.api.jobs[':id'].$get({ param: { id: ids.dead } })).json();
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
    expect(page1.status).toBe(200);
    const p1 = await page1.json();
    expect(p1.total).toBe(5);
    expect(p1.limit).toBe(2);
    expect(p1.jobs).toHaveLength(2);
    const p3 = await (await api.client.api.jobs.$get({ query: { queue: 'list-q', state: 'pending', limit: '2', offset: '4' } })).json();
    expect(p3.jobs).toHaveLength(1);
    expect(p3.offset).toBe(4);
    // Newest first.
    expect(p1.jobs[0]!.payload).toEqual({ i: 4 });
    const cancelled = await (await api.client.api.jobs.$get({ query: { tenantId: 't-list', state: 'cancelled' } })).json();
    expect(cancelled.jobs.map((j) => j.state)).toEqual(['cancelled']);
    const byType = await (await api.client.api.jobs.$get({ query: { jobType: 'listed', tenantId: 't-list' } })).json();
    expect(byType.total).toBe(6);
    const none = await (await api.client.api.jobs.$get({ query: { queue: 'no-such-queue' } })).json();
    expect(none).toMatchObject({ jobs: [], total: 0 });
  });
});

describe('replay and cancel', () => {
  it('replay: 409 for a live job; a terminal job returns to pending with a fresh budget and replayCount + 1', async () => {
    const pending = await (await api.client.api.jobs.$post({ json: { jobType: 'r' } })).json();
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

  it('cancel: a pending job is cancelled; cancelling again or a running job is 409', async () => {
    const job = await (await api.client.api.jobs.$post({ json: { jobType: 'c' } })).json();
    const res = await api.client.api.jobs[':id'].cancel.$post({ param: { id: job.id } });
    expect(res.status).toBe(200);
    expect((await res.json()).state).toBe('cancelled');
    expect((await jobRow(db.pool, job.id))!.state).toBe('cancelled');
    const again = await api.client.api.jobs[':id'].cancel.$post({ param: { id: job.id } });
    expect(again.status).toBe(409);
    expect(await errorCode(again)).toBe('JOB_STATE_CONFLICT');
    const running = await insertJob(db.pool, { state: 'running', jobType: 'c' });
    const busy = await api.client.api.jobs[':id'].cancel.$post({ param: { id: running } });
    expect(busy.status).toBe(409);
    expect((await jobRow(db.pool, running))!.state).toBe('running');
  });

  it('POST /api/dlq/replay replays at most `limit` dead letters, oldest first', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await insertJob(db.pool, { state: 'dead_lettered', queue: 'dlq-q', jobType: 'd' }));
    const res = await api.client.api.dlq.replay.$post({ query: { limit: '2', queue: 'dlq-q' } });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.replayed).toBe(2);
    expect(body.jobs.map((j) => j.id).sort()).toEqual(ids.slice(0, 2).sort());
    expect(await countJobs(db, `queue = 'dlq-q' AND state = 'dead_lettered'`)).toBe(1);
    expect(await countJobs(db, `queue = 'dlq-q' AND state = 'pending' AND replay_count = 1`)).toBe(2);
  });
});

describe('queues and workers', () => {
  it('GET /api/queues/:queue/depth counts by state; an unknown queue is all zeros and not created', async () => {
    await insertJob(db.pool, { queue: 'depth-q', jobType: 'x' });
    await insertJob(db.pool, { queue: 'depth-q', jobType: 'x', state: 'running' });
    await insertJob(db.pool, { queue: 'depth-q', jobType: 'x', state: 'succeeded' });
    const res = await api.client.api.queues[':queue'].depth.$get({ param: { queue: 'depth-q' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      queue: 'depth-q',
      counts: { pending: 1, leased: 0, running: 1, succeeded: 1, dead_lettered: 0, cancelled: 0 },
    });
    const empty = await (await api.client.api.queues[':queue'].depth.$get({ param: { queue: 'nothing-here' } })).json();
    expect(Object.values(empty.counts).every((n) => n === 0)).toBe(true);
    expect(await countJobs(db, `queue = 'nothing-here'`)).toBe(0);
  });

  it('GET /api/queues lists every queue with counts', async () => {
    const res = await api.client.api.queues.$get();
    expect(res.status).toBe(200);
    const { queues } = await res.json();
    const depth = queues.find((q) => q.queue === 'depth-q');
    expect(depth?.counts.running).toBe(1);
    expect(queues.map((q) => q.queue)).toContain('mail');
  });

  it('GET /api/workers shows a live worker with its occupancy', async () => {
    const worker = createBaton({ connectionString: db.url, poolSize: 2, queues: { 'w-q': 3 }, workerId: 'http-test-worker' });
    await worker.start();
    try {
      const w = await waitFor(
        async () => {
          const { workers } = await (await api.client.api.workers.$get()).json();
          return workers.find((x) => x.id === 'http-test-worker');
        },
        { message: 'worker to appear in /api/workers' },
      );
      expect(w).toMatchObject({ alive: true, queues: { 'w-q': 3 }, inFlight: 0, pid: process.pid });
      expect(w.lastSeenAt).toMatch(ISO);
    } finally {
      await worker.stop();
    }
  });
});

describe('health, metrics, console', () => {
  it('/healthz is up; /readyz is 200 when the database answers and the engine started, else 503', async () => {
    expect((await api.client.healthz.$get()).status).toBe(200);
    const ready = await api.client.readyz.$get();
    expect(ready.status).toBe(200);
    api.setStarted(false);
    try {
      const notReady = await api.client.readyz.$get();
      expect(notReady.status).toBe(503);
      expect(await errorCode(notReady)).toBe('NOT_READY');
    } finally {
      api.setStarted(true);
    }
  });

  it('/readyz is 503 when the database is unreachable', async () => {
    const dead = createBaton({ connectionString: 'postgres://postgres@127.0.0.1:1/none', poolSize: 1 });
    const app = createApp(dead, { metrics: false });
    const res = await app.request('/readyz');
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: { code: 'NOT_READY', details: { db: 'unreachable' } } });
    await dead.stop();
  });

  it('GET / serves the console page; a missing file is a 404, not a crash', async () => {
    const res = await api.client.index.$get();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toMatch(/<html/i);
    const app = createApp(api.baton, { metrics: false, consoleHtmlPath: '/nonexistent/console.html' });
    const missing = await app.request('/');
    expect(missing.status).toBe(404);
    expect(await errorCode(missing)).toBe('ROUTE_NOT_FOUND');
  });

  it('/metrics exposes job counts by queue and state, enqueue counters and HTTP metrics', async () => {
    await api.client.api.jobs.$post({ json: { jobType: 'm', queue: 'metrics-q' } });
    const res = await api.client.metrics.$get();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(/baton_jobs\{queue="metrics-q",state="pending"\} 1\b/);
    expect(text).toMatch(/baton_jobs_enqueued_total\{queue="metrics-q"\} 1\b/);
    expect(text).toMatch(/baton_http_requests_total\{method="POST",route="\/api\/jobs",status="201"\} \d+/);
  });
});

describe('request ids, logs and server-side failures', () => {
  it('echoes a plain X-Request-Id, replaces an unsafe one, and logs each request on a child logger', async () => {
    const lines: Array<{ bindings: Record<string, unknown>; level: string; obj: Record<string, unknown> }> = [];
    const make = (bindings: Record<string, unknown>): Logger => {
      const at = (level: string) => (obj: object) => void lines.push({ bindings, level, obj: obj as Record<string, unknown> });
      return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (b) => make({ ...bindings, ...b }) };
    };
    const app = createApp(api.baton, { metrics: false, logger: make({}) });
    const res = await app.request('/api/queues', { headers: { 'x-request-id': 'req-abc_123' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('req-abc_123');
    expect(lines).toContainEqual(
      expect.objectContaining({ bindings: { reqId: 'req-abc_123' }, level: 'info', obj: expect.objectContaining({ status: 200, path: '/api/queues' }) }),
    );
    const unsafe = await app.request('/healthz', { headers: { 'x-request-id': 'evil\tid with spaces' } });
    expect(unsafe.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a database that is down gives a 5xx with a generic message: no stack, no connection details', async () => {
    const down = createBaton({ connectionString: 'postgres://postgres:hunter2@127.0.0.1:1/secretdb', poolSize: 1 });
    const app = createApp(down, { metrics: false });
    for (const path of ['/api/queues', '/api/jobs/1', '/api/workers']) {
      const res = await app.request(path);
      const text = await res.text();
      expect(res.status, text).toBeGreaterThanOrEqual(500);
      const body = JSON.parse(text) as { error: { code: string; message: string } };
      expect(['DB_UNAVAILABLE', 'INTERNAL']).toContain(body.error.code);
      expect(text).not.toMatch(/hunter2|secretdb|ECONNREFUSED|127\.0\.0\.1|\bat .+:\d+:\d+/);
    }
    const enqueue = await app.request('/api/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jobType":"x"}' });
    expect(enqueue.status).toBeGreaterThanOrEqual(500);
    // A scrape still answers, and says the job counts could not be read.
    const scrape = await createApp(down, {}).request('/metrics');
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toMatch(/^baton_metrics_collect_errors_total 1$/m);
    await down.stop();
  });
});

describe('a job run end to end', () => {
  let worker: Baton;
  let attempts = 0;
  beforeAll(async () => {
    worker = createBaton({
      connectionString: db.url,
      poolSize: 3,
      queues: { e2e: 2 },
      backoffBaseMs: 100,
      backoffCapMs: 200,
      handlers: {
        flaky: () => {
          attempts++;
          if (attempts === 1) throw new TerminalError('first run refuses');
          return { ok: attempts };
        },
      },
    });
    await worker.start();
  });
  afterAll(async () => {
    await worker?.stop();
  });

  it('dead-letters, is replayed over HTTP and then succeeds; metrics count both', async () => {
    const { createMetrics } = await import('../../src/http/metrics.ts');
    const metrics = createMetrics(worker, { processMetrics: false });
    try {
      const job = await (await api.client.api.jobs.$post({ json: { jobType: 'flaky', queue: 'e2e' } })).json();
      const dead = await waitFor(
        async () => {
          const j = await (await api.client.api.jobs[':id'].$get({ param: { id: job.id } })).json();
          return j.state === 'dead_lettered' ? j : undefined;
        },
        { message: 'job to dead-letter' },
      );
      expect(dead.attempt).toBe(1);
      expect(dead.lastError).toMatchObject({ kind: 'terminal', message: 'first run refuses' });
      expect(JSON.stringify(dead)).not.toMatch(/\bat .+:\d+:\d+/);
      const replayed = await api.client.api.jobs[':id'].replay.$post({ param: { id: job.id } });
      expect(replayed.status).toBe(200);
      const done = await waitFor(
        async () => {
          const j = await (await api.client.api.jobs[':id'].$get({ param: { id: job.id } })).json();
          return j.state === 'succeeded' ? j : undefined;
        },
        { message: 'replayed job to succeed' },
      );
      expect(done).toMatchObject({ replayCount: 1, attempt: 1, result: { ok: 2 } });
      // Outcome events may trail the row by a moment; wait for the last one.
      const text = await waitFor(async () => {
        const t = await metrics.render();
        return /baton_jobs_succeeded_total\{queue="e2e"\} 1\b/.test(t) ? t : undefined;
      });
      expect(text).toMatch(/baton_jobs_dead_lettered_total\{queue="e2e"\} 1\b/);
      expect(text).toMatch(/baton_jobs_succeeded_total\{queue="e2e"\} 1\b/);
      expect(text).toMatch(/baton_job_start_latency_seconds_count\{queue="e2e"\} 2\b/);
      expect(text).toMatch(/baton_claim_duration_seconds_count\{queue="e2e"\} \d+/);
      expect(text).toMatch(/baton_slots_concurrency\{worker="[^"]+",queue="e2e"\} 2\b/);
    } finally {
      metrics.close();
    }
  });
});
