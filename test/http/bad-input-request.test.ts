// The bad-input matrix, the rest of the request: SQL-shaped
// strings, query strings, unknown routes and methods, request smuggling and the
// bearer token. Every rejection gets its status and code and writes nothing.

import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { type ApiHarness, badInputHelpers, countJobs, field, JSON_HEADERS, okJson, startApi } from './harness.ts';

/** Small enough to test cheaply, large enough for a 100k-deep array (200 kB). */
const LIMIT = 256 * 1024;
const db = useTestDatabase();
let api: ApiHarness;

beforeAll(async () => {
  api = await startApi(db, { app: { bodyLimitBytes: LIMIT } });
});
afterAll(async () => {
  await api?.close();
});

const { expectError } = badInputHelpers(db, () => api);

describe('SQL-shaped strings', () => {
  const nasty = ["' OR 1=1 --", '"; DROP TABLE jobs; --', '$$', '\\', '%', '_', "'; SELECT pg_sleep(10); --"];

  it('are stored and returned verbatim in payloads and idempotency keys, and harm nothing', async () => {
    for (const s of nasty) {
      const res = await api.client.api.jobs.$post({ json: { jobType: 'sql', idempotencyKey: `k${s}`, payload: { s, [s]: s } } });
      expect(res.status, s).toBe(201);
      const job = await okJson(res);
      expect(job.idempotencyKey).toBe(`k${s}`);
      expect(job.payload).toEqual({ s, [s]: s });
      const row = await db.query<{ idempotency_key: string; payload: unknown }>(
        `SELECT idempotency_key, payload FROM baton.jobs WHERE id = $1`,
        [job.id],
      );
      expect(row.rows[0]).toEqual({ idempotency_key: `k${s}`, payload: { s, [s]: s } });
    }
    expect(await countJobs(db, `job_type = 'sql'`)).toBe(nasty.length);
  });

  it('are refused in name filters, and _ / % match literally', async () => {
    for (const s of ["' OR 1=1 --", '%', '"; DROP TABLE jobs; --']) {
      const res = await api.raw(`/api/jobs?queue=${encodeURIComponent(s)}`);
      await expectError(res, 400, 'INVALID_ARGUMENT');
    }
    await insertJob(db.pool, { jobType: 'aXb' });
    const underscore = await okJson(api.client.api.jobs.$get({ query: { jobType: 'a_b' } }));
    expect(underscore.total).toBe(0);
  });
});

describe('query strings', () => {
  it.each([
    ['unknown state', 'state=finished', 'state'],
    ['upper-case state', 'state=PENDING', 'state'],
    ['negative limit', 'limit=-1', 'limit'],
    ['zero limit', 'limit=0', 'limit'],
    ['limit above 500', 'limit=501', 'limit'],
    ['limit 1e9', 'limit=1e9', 'limit'],
    ['huge limit', 'limit=99999999999999999999', 'limit'],
    ['float limit', 'limit=1.5', 'limit'],
    ['empty limit', 'limit=', 'limit'],
    ['negative offset', 'offset=-1', 'offset'],
    ['repeated limit', 'limit=1&limit=2', 'limit'],
    ['unknown parameter', 'sortBy=id', 'sortBy'],
    ['unknown sort key', 'sort=payload', 'sort'],
    ['unknown order', 'order=random', 'order'],
    ['createdAfter without a time', 'createdAfter=2030-01-01', 'createdAfter'],
    ['createdBefore not a date', 'createdBefore=soon', 'createdBefore'],
  ])('GET /api/jobs?%s -> 400 naming the parameter', async (_name, qs, path) => {
    const body = await expectError(await api.raw(`/api/jobs?${qs}`), 400, 'INVALID_ARGUMENT');
    expect(field(body)).toBe(path);
  });

  it('POST /api/dlq/replay?limit= out of 1..1000 -> 400, nothing replayed', async () => {
    const id = await insertJob(db.pool, { state: 'dead_lettered', jobType: 'dlq-bad' });
    for (const qs of ['limit=0', 'limit=1001', 'limit=-5', 'limit=abc', 'tenantId=%27']) {
      await expectError(await api.raw(`/api/dlq/replay?${qs}`, { method: 'POST', headers: JSON_HEADERS }), 400, 'INVALID_ARGUMENT');
    }
    expect(await countJobs(db, `id = $1 AND state = 'dead_lettered'`, [id])).toBe(1);
  });
});

describe('routes and methods', () => {
  it('an unknown route -> 404 ROUTE_NOT_FOUND', async () => {
    await expectError(await api.raw('/api/nope'), 404, 'ROUTE_NOT_FOUND');
    await expectError(await api.raw('/api/jobs/1/explode', { method: 'POST' }), 404, 'ROUTE_NOT_FOUND');
  });

  it('a known path with the wrong method -> 405 with Allow', async () => {
    const del = await api.raw('/api/jobs', { method: 'DELETE' });
    expect(del.headers.get('allow')).toMatch(/GET/);
    expect(del.headers.get('allow')).toMatch(/POST/);
    await expectError(del, 405, 'METHOD_NOT_ALLOWED');
    await expectError(await api.raw('/api/jobs/1/cancel'), 405, 'METHOD_NOT_ALLOWED');
    await expectError(await api.raw('/healthz', { method: 'POST' }), 405, 'METHOD_NOT_ALLOWED');
  });

  it('Content-Length together with Transfer-Encoding is refused (request smuggling)', async () => {
    const { port } = new URL(api.url);
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      let data = '';
      socket.on('data', (d) => (data += d.toString()));
      socket.on('end', () => resolve(data));
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
      socket.write(
        'POST /api/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 16\r\n' +
          'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n10\r\n{"jobType":"ab"}\r\n0\r\n\r\n',
      );
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
    expect(await countJobs(db, `job_type = 'ab'`)).toBe(0);
  });
});

describe('bearer token', () => {
  let secured: ApiHarness;
  beforeAll(async () => {
    secured = await startApi(db, { app: { apiToken: 's3cret-token' } });
  });
  afterAll(async () => {
    await secured?.close();
  });

  it.each([
    ['missing', undefined],
    ['wrong', 'Bearer wrong-token'],
    ['a prefix of the token', 'Bearer s3cret'],
    ['basic scheme', 'Basic czNjcmV0LXRva2Vu'],
    ['no scheme', 's3cret-token'],
    ['empty bearer', 'Bearer '],
  ])('%s -> 401 and nothing written', async (_name, authorization) => {
    const headers: Record<string, string> = { ...JSON_HEADERS, ...(authorization ? { authorization } : {}) };
    const before = await countJobs(db);
    const res = await secured.raw('/api/jobs', { method: 'POST', headers, body: '{"jobType":"auth"}' });
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    await expectError(res, 401, 'UNAUTHORIZED');
    await expectError(await secured.raw('/api/jobs', { headers }), 401, 'UNAUTHORIZED');
    await expectError(await secured.raw('/metrics', { headers }), 401, 'UNAUTHORIZED');
    expect(await countJobs(db)).toBe(before);
  });

  it('the right token passes; health checks stay open', async () => {
    const { createClient } = await import('../../src/client/index.ts');
    const client = createClient(secured.url, { token: 's3cret-token' });
    const res = await client.api.jobs.$post({ json: { jobType: 'auth-ok' } });
    expect(res.status).toBe(201);
    expect((await client.metrics.$get()).status).toBe(200);
    expect((await secured.raw('/healthz')).status).toBe(200);
    expect((await secured.raw('/readyz')).status).toBe(200);
  });
});
