// Queue, worker, health, metrics and console routes through the typed client on
// a real server and database, plus request logging, a down database, and one
// job run end to end (dead-lettered, replayed over HTTP, succeeded).

import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { CONSOLE_HTML_PATH_DEFAULT, createApp } from '../../src/http/app.ts';
import { CONSOLE_ASSETS } from '../../src/http/ops/console-files.ts';
import { type Baton, createBaton, type Logger, TerminalError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { waitFor } from '../helpers/wait.ts';
import { countJobs, errorCode, okJson, useApi } from './harness.ts';

const db = useTestDatabase();
const api = useApi(db);

const CONSOLE_DIR = path.dirname(CONSOLE_HTML_PATH_DEFAULT);
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
describe('queues and workers', () => {
  it('GET /api/queues/:queue/depth counts by state; an unknown queue is all zeros and not created', async () => {
    // The succeeded job is completed by the executor: succeeded counts are kept by the statements that write them.
    await insertJob(db.pool, { queue: 'depth-q', jobType: 'x' });
    const ex = new PgExecutor(db.pool, quoteSchema('baton'));
    const [done] = await ex.jobClaim({ queue: 'depth-q', limit: 1, owner: 'depth-test', leaseMs: 60_000, intoRunning: true });
    await ex.jobCompleteMany({ items: [{ id: done!.id, token: done!.token, result: null }] });
    await insertJob(db.pool, { queue: 'depth-q', jobType: 'x' });
    await insertJob(db.pool, { queue: 'depth-q', jobType: 'x', state: 'running' });
    const res = await api.client.api.queues[':queue'].depth.$get({ param: { queue: 'depth-q' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      queue: 'depth-q',
      counts: { pending: 1, waiting: 0, leased: 0, running: 1, succeeded: 1, dead_lettered: 0, cancelled: 0 },
    });
    const empty = await okJson(api.client.api.queues[':queue'].depth.$get({ param: { queue: 'nothing-here' } }));
    expect(Object.values(empty.counts).every((n) => n === 0)).toBe(true);
    expect(await countJobs(db, `queue = 'nothing-here'`)).toBe(0);
  });

  it('the typed client percent-encodes path parameters: a queue name with "/" reaches its own depth', async () => {
    await insertJob(db.pool, { queue: 'emails/eu', jobType: 'x' });
    const depth = api.client.api.queues[':queue'].depth;
    expect(depth.$url({ param: { queue: 'emails/eu' } }).pathname).toBe('/api/queues/emails%2Feu/depth');
    const res = await depth.$get({ param: { queue: 'emails/eu' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ queue: 'emails/eu', counts: { pending: 1 } });
  });

  it('GET /api/queues lists every queue with counts', async () => {
    const res = await api.client.api.queues.$get();
    expect(res.status).toBe(200);
    const { queues } = await okJson(res);
    const depth = queues.find((q) => q.queue === 'depth-q');
    expect(depth?.counts.running).toBe(1);
    expect(queues.map((q) => q.queue)).not.toContain('nothing-here');
  });

  it('GET /api/workers shows a live worker with its occupancy', async () => {
    const worker = createBaton({ connectionString: db.url, poolSize: 2, queues: { 'w-q': 3 }, workerId: 'http-test-worker' });
    await worker.start();
    try {
      const w = await waitFor(
        async () => {
          const { workers } = await okJson(api.client.api.workers.$get());
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

  it('serves the console page and each file it loads with its type, no-store and a CSP without inline code; nothing else', async () => {
    const page = await api.raw('/');
    for (const header of ['cache-control', 'content-security-policy', 'x-content-type-options']) {
      expect(page.headers.get(header), header).toBeTruthy();
    }
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toContain('unsafe-inline');
    for (const [name, type] of CONSOLE_ASSETS) {
      const res = await api.client.console[':file'].$get({ param: { file: name } });
      expect(res.status, name).toBe(200);
      expect(res.headers.get('content-type'), name).toBe(type);
      for (const header of ['cache-control', 'content-security-policy', 'x-content-type-options']) {
        expect(res.headers.get(header), `${name} ${header}`).toBe(page.headers.get(header));
      }
      expect(await res.text(), name).toBe(readFileSync(path.join(CONSOLE_DIR, name), 'utf8'));
    }
    const app = createApp(api.baton, { metrics: false });
    for (const bad of [
      'index.html',
      'nope.js',
      'constructor',
      '__proto__',
      '..%2Fapp.ts',
      '%2E%2E%2F..%2Fpackage.json',
      'main.js%00',
      'MAIN.JS',
    ]) {
      const res = await app.request(`/console/${bad}`);
      expect(res.status, bad).toBe(404);
      expect(await errorCode(res), bad).toBe('ROUTE_NOT_FOUND');
    }
    expect((await app.request('/console/')).status).toBe(404);
    expect((await app.request('/console/util.js/x')).status).toBe(404);
    const missing = createApp(api.baton, { metrics: false, consoleHtmlPath: '/nonexistent/console/index.html' });
    expect((await missing.request('/console/main.js')).status).toBe(404);
  });

  it('lists every file of the console folder, and every file the page and its modules load is listed', () => {
    expect(readdirSync(CONSOLE_DIR).sort()).toEqual(['index.html', ...CONSOLE_ASSETS.keys()].sort());
    const loads = (file: string) => {
      const text = readFileSync(path.join(CONSOLE_DIR, file), 'utf8');
      const refs = file.endsWith('.html')
        ? [...text.matchAll(/(?:src|href)="console\/([^"]+)"/g)]
        : [...text.matchAll(/^import [^;]*? from '\.\/([^']+)';$/gm)];
      return refs.map((m) => m[1]!);
    };
    const reached = new Set<string>();
    const queue = loads('index.html');
    while (queue.length > 0) {
      const file = queue.shift()!;
      expect(CONSOLE_ASSETS.has(file), `${file} is loaded but not served`).toBe(true);
      if (reached.has(file)) continue;
      reached.add(file);
      if (file.endsWith('.js')) queue.push(...loads(file));
    }
    // Nothing listed goes unused: every file is reached from the page.
    expect([...reached].sort()).toEqual([...CONSOLE_ASSETS.keys()].sort());
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
      expect.objectContaining({
        bindings: { reqId: 'req-abc_123' },
        level: 'info',
        obj: expect.objectContaining({ status: 200, path: '/api/queues' }),
      }),
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
    const enqueue = await app.request('/api/jobs', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"jobType":"x"}',
    });
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
      const job = await okJson(api.client.api.jobs.$post({ json: { jobType: 'flaky', queue: 'e2e' } }));
      const dead = await waitFor(
        async () => {
          const j = await okJson(api.client.api.jobs[':id'].$get({ param: { id: job.id } }));
          return j.state === 'dead_lettered' ? j : undefined;
        },
        { message: 'job to dead-letter' },
      );
      expect(dead.attempt).toBe(1);
      expect(dead.lastError).toMatchObject({ kind: 'terminal', message: 'first run refuses' });
      // The handler's own stack is stored with the attempt and served with the full job.
      expect(dead.lastError?.stack).toMatch(/first run refuses\n\s+at .+:\d+:\d+/);
      expect(dead.errors[0]?.stack).toBe(dead.lastError?.stack);
      const replayed = await api.client.api.jobs[':id'].replay.$post({ param: { id: job.id } });
      expect(replayed.status).toBe(200);
      const done = await waitFor(
        async () => {
          const j = await okJson(api.client.api.jobs[':id'].$get({ param: { id: job.id } }));
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
      expect(text).toMatch(/baton_presence_held\{worker="[^"]+"\} 1\b/);
    } finally {
      metrics.close();
    }
  });
});
