// Listings cost what their row count says, whatever the jobs hold: a page carries
// summaries (payload and result only when small, the failure count and the last
// failure without its stack), a response is capped in size, and admin reads run on a
// pool of their own, so hammering the listing never starves the workers' heartbeats,
// however slow a listing is.

import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LIST_TOTAL_CAP } from '../../src/core/admin.ts';
import { LIST_WINDOW_ROWS } from '../../src/db/pg/queries/job-read.ts';
import { LIST_RESPONSE_MAX_BYTES } from '../../src/http/wire.ts';
import { LIST_INLINE_MAX_BYTES } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { deferred } from '../helpers/wait.ts';
import { type ApiHarness, startApi } from './harness.ts';

const db = useTestDatabase();
const big = (bytes: number) => ({ blob: 'x'.repeat(bytes) });
/** Incompressible text, so its stored size is about its size. */
const noise = (chars: number) =>
  randomBytes(Math.ceil(chars * 0.75))
    .toString('base64')
    .slice(0, chars);

interface WireSummary {
  id: string;
  state: string;
  payload?: unknown;
  payloadBytes: number;
  result?: unknown;
  resultBytes?: number;
  errorCount: number;
  errors?: unknown;
  lastError: { message: string; stack?: string } | null;
}

describe('listing summaries', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await startApi(db, { baton: { queues: {} } });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('carry small payloads and results inline, leave large ones out with their size, and only the last failure', async () => {
    const small = await insertJob(db.pool, { queue: 'sum', payload: { n: 1 } });
    const large = await insertJob(db.pool, { queue: 'sum', payload: { n: noise(100_000) } });
    const done = await insertJob(db.pool, { queue: 'sum', state: 'succeeded', payload: { n: 2 }, result: { r: noise(50_000) } });
    const failing = Array.from({ length: 3 }, (_, i) => ({
      attempt: i + 1,
      token: String(i + 1),
      kind: 'transient',
      name: 'Error',
      message: `m${i}-${'y'.repeat(5_000)}`,
      stack: 'Error\n    at secret (/srv/app.js:1:1)',
      at: new Date().toISOString(),
    }));
    const failed = await insertJob(db.pool, { queue: 'sum', state: 'dead_lettered', attempt: 3, errors: failing, lastError: failing[2] });

    const res = await api.raw('/api/jobs?queue=sum&limit=10');
    expect(res.status).toBe(200);
    const page = (await res.json()) as { jobs: WireSummary[]; truncated: boolean };
    expect(page.truncated).toBe(false);
    const by = new Map(page.jobs.map((j) => [j.id, j]));
    expect(by.get(small)).toMatchObject({ payload: { n: 1 }, errorCount: 0, lastError: null });
    expect(by.get(small)!.payloadBytes).toBeLessThanOrEqual(LIST_INLINE_MAX_BYTES);
    expect(by.get(large)).not.toHaveProperty('payload');
    expect(by.get(large)!.payloadBytes).toBeGreaterThan(LIST_INLINE_MAX_BYTES);
    expect(by.get(done)).toMatchObject({ state: 'succeeded', payload: { n: 2 } });
    expect(by.get(done)).not.toHaveProperty('result');
    expect(by.get(done)!.resultBytes).toBeGreaterThan(LIST_INLINE_MAX_BYTES);
    const f = by.get(failed)!;
    expect(f).not.toHaveProperty('errors');
    expect(f.errorCount).toBe(3);
    expect(f.lastError!.message.startsWith('m2-')).toBe(true);
    expect(f.lastError!.message.length).toBeLessThanOrEqual(1_000);
    expect(f.lastError).not.toHaveProperty('stack');

    // The full job is one read away.
    const full = (await (await api.raw(`/api/jobs/${large}`)).json()) as { payload: { n: string } };
    expect(full.payload.n).toHaveLength(100_000);
    const fullFailed = (await (await api.raw(`/api/jobs/${failed}`)).json()) as { errors: Array<{ stack?: string }> };
    expect(fullFailed.errors).toHaveLength(3);
    // The full job carries each attempt's stack, for the operator reading the failure.
    expect(fullFailed.errors[2]!.stack).toBe('Error\n    at secret (/srv/app.js:1:1)');
  });

  it('a page of many large summaries is cut at the response cap, and the next page goes on from there', async () => {
    const payload = { p: noise(1_500) };
    const result = { r: noise(1_500) };
    const lastError = { attempt: 1, token: '1', kind: 'terminal', name: 'Error', message: noise(1_000), at: new Date().toISOString() };
    for (let i = 0; i < 500; i++) {
      await insertJob(db.pool, { queue: 'cap', state: 'succeeded', payload, result, lastError, errors: [lastError] });
    }
    const res = await api.raw('/api/jobs?queue=cap&limit=500');
    const text = await res.text();
    const page = JSON.parse(text) as { jobs: WireSummary[]; truncated: boolean; total: number };
    expect(page.truncated).toBe(true);
    expect(page.jobs.length).toBeGreaterThan(50);
    expect(page.jobs.length).toBeLessThan(500);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(LIST_RESPONSE_MAX_BYTES + 1_000);
    const next = (await (await api.raw(`/api/jobs?queue=cap&limit=500&offset=${page.jobs.length}`)).json()) as { jobs: WireSummary[] };
    expect(next.jobs[0]!.id).not.toBe(page.jobs.at(-1)!.id);
    expect(BigInt(next.jobs[0]!.id)).toBeLessThan(BigInt(page.jobs.at(-1)!.id));
    // By cursor: a cut page's nextCursor is its last job, so the next page starts right after it.
    const cut = page as typeof page & { nextCursor: string | null };
    expect(cut.nextCursor).toBe(page.jobs.at(-1)!.id);
    const after = (await (await api.raw(`/api/jobs?queue=cap&limit=500&cursor=${cut.nextCursor}`)).json()) as { jobs: WireSummary[] };
    expect(after.jobs.map((j) => j.id)).toEqual(next.jobs.map((j) => j.id));
  });

  it('refuse a cursor that is no id, beside an offset or on a windowed listing: 400 INVALID_ARGUMENT', async () => {
    for (const [query, code] of [
      ['cursor=abc', 'INVALID_ARGUMENT'],
      ['cursor=0', 'INVALID_ARGUMENT'],
      ['cursor=12&offset=3', 'INVALID_ARGUMENT'],
      ['cursor=12&sort=priority', 'INVALID_ARGUMENT'],
    ] as const) {
      const res = await api.raw(`/api/jobs?${query}`);
      expect([query, res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([query, 400, code]);
    }
  });

  it('count matching jobs up to the cap, a windowed filter within its window, and exactly below the cap', async () => {
    await db.pool.query(
      `INSERT INTO baton.jobs (queue, job_type, state, finished_at)
       SELECT 'count', 't', CASE WHEN g % 2 = 0 THEN 'succeeded' ELSE 'pending' END, CASE WHEN g % 2 = 0 THEN now() END
       FROM generate_series(1, $1::int) g`,
      [2 * LIST_TOTAL_CAP + 10],
    );
    const total = async (query: string) => ((await (await api.raw(`/api/jobs?${query}`)).json()) as { total: number }).total;
    expect(await total('queue=count')).toBe(LIST_TOTAL_CAP);
    expect(await total('queue=count&state=pending')).toBe(LIST_TOTAL_CAP);
    // A state beside a queue is filtered within the queue's newest finished jobs (docs/http-api.md).
    expect(await total('queue=count&state=succeeded')).toBe(LIST_WINDOW_ROWS);
    await db.pool.query(
      `DELETE FROM baton.jobs WHERE queue = 'count' AND id > (SELECT min(id) + 99 FROM baton.jobs WHERE queue = 'count')`,
    );
    expect(await total('queue=count')).toBe(100);
  });
});

describe('admin reads beside running jobs', () => {
  let api: ApiHarness | undefined;
  const pools: pg.Pool[] = [];
  afterEach(async () => {
    await api?.close();
    api = undefined;
    await Promise.all(pools.splice(0).map((p) => p.end()));
  });

  /**
   * A listing's statements: the sorted and time-filtered ones are prepared (job_list_by_<key>,
   * job_count_capped_by_time); the others go unnamed (planned with their values, job-read.ts) and
   * are known by their text: a page of ids through ANY (ARRAY(...)), or a capped count.
   */
  const isListing = (c: { name?: string; text?: string }) =>
    /\.job_(list|count)_[a-z_]+$/.test(c?.name ?? '') || /= ANY \(ARRAY\(SELECT id FROM \(|^SELECT least\(count\(\*\)/.test(c?.text ?? '');

  it('heartbeats keep every lease while the listing is hammered', async () => {
    // Heavy rows for the listing to wade through: twenty 1 MiB payloads.
    for (let i = 0; i < 20; i++) await insertJob(db.pool, { queue: 'heavy', payload: big(1024 * 1024) });
    // The workers' pool (3 connections) holds the connection of any listing statement sent
    // through it for 300 ms, as a slow listing on a large table would.
    const workersPool = new pg.Pool({ connectionString: db.url, max: 3, application_name: 'baton' });
    workersPool.on('error', () => undefined);
    pools.push(workersPool);
    const query = workersPool.query.bind(workersPool) as (config: unknown) => Promise<pg.QueryResult>;
    let slowed = 0;
    (workersPool as unknown as { query: unknown }).query = async (config: { name?: string; text?: string }) => {
      if (!isListing(config)) return query(config);
      slowed++;
      const client = await workersPool.connect();
      try {
        const res = await client.query(config as pg.QueryConfig);
        await new Promise((r) => setTimeout(r, 300));
        return res;
      } finally {
        client.release();
      }
    };
    const gate = deferred();
    const started: string[] = [];
    // Long enough that only pool starvation, not a loaded machine's scheduling delays
    // (heartbeats every third of it), can lose a lease; the hammering lasts two of them.
    const LEASE_MS = 4_000;
    api = await startApi(db, {
      baton: {
        pool: workersPool,
        queues: { work: 4 },
        leaseMs: LEASE_MS,
        handlers: {
          hold: async (ctx) => {
            started.push(ctx.job.id);
            await gate.promise;
            return { ok: true };
          },
        },
      },
    });
    const a = api;
    const ids = (await a.baton.enqueueMany(Array.from({ length: 4 }, () => ({ jobType: 'hold', queue: 'work' })))).map((r) => r.job.id);
    await expect.poll(() => started.length, { timeout: 10_000 }).toBe(4);

    // Twelve readers, back to back, for two lease lengths.
    const until = Date.now() + 2 * LEASE_MS;
    let reads = 0;
    let maxBytes = 0;
    const reader = async () => {
      while (Date.now() < until) {
        const res = await a.raw('/api/jobs?limit=500');
        const text = await res.text();
        expect(res.status).toBe(200);
        maxBytes = Math.max(maxBytes, Buffer.byteLength(text));
        reads++;
      }
    };
    await Promise.all(Array.from({ length: 12 }, reader));
    expect(reads).toBeGreaterThan(12);
    expect(maxBytes).toBeLessThanOrEqual(LIST_RESPONSE_MAX_BYTES + 1_000);
    expect(a.baton.stats()).toMatchObject({ leasesLost: 0, fencedWrites: 0 });
    // The listings ran on the admin pool: none went through the workers' pool.
    expect(slowed).toBe(0);

    gate.resolve();
    for (const id of ids) {
      await expect
        .poll(async () => (await db.query('SELECT state, attempt FROM baton.jobs WHERE id = $1', [id])).rows[0], { timeout: 10_000 })
        .toEqual({ state: 'succeeded', attempt: 1 });
    }
    expect(started.sort()).toEqual([...ids].sort());
  });
});
