// The bad-input matrix, request bodies: malformed JSON,
// content types, wrong types and ranges, names, NUL bytes and pathological sizes.
// Every rejection gets its status and code, never a 5xx or a stack trace, and
// writes nothing (row counts are checked before and after).

import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
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

const { expectError, rejectsEnqueue } = badInputHelpers(db, () => api);

describe('malformed JSON and content types', () => {
  it.each([
    ['truncated', '{"jobType": "a"'],
    ['trailing garbage', '{"jobType": "a"} x'],
    ['two documents', '{"jobType": "a"}{"jobType": "b"}'],
    ['a BOM', '\uFEFF{"jobType": "a"}'],
    ['empty body', ''],
    ['single quotes', "{'jobType': 'a'}"],
    ['NaN literal', '{"jobType": "a", "priority": NaN}'],
  ])('%s -> 400 INVALID_JSON', async (_name, body) => {
    await rejectsEnqueue(body, 400, 'INVALID_JSON');
  });

  it('non-UTF-8 bytes -> 400 INVALID_JSON', async () => {
    await rejectsEnqueue(Buffer.from([0x7b, 0x22, 0x6a, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), 400, 'INVALID_JSON');
  });

  it.each([
    ['text/plain', { 'content-type': 'text/plain' }],
    ['form', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['latin1 charset', { 'content-type': 'application/json; charset=latin1' }],
    ['absent', {} as Record<string, string>],
  ])('Content-Type %s -> 415', async (_name, headers) => {
    await rejectsEnqueue(new TextEncoder().encode('{"jobType":"a"}'), 415, 'UNSUPPORTED_MEDIA_TYPE', headers);
  });

  it('accepts application/json with charset=utf-8 and +json types', async () => {
    for (const ct of ['application/json; charset=UTF-8', 'application/vnd.baton+json']) {
      const res = await api.raw('/api/jobs', { method: 'POST', headers: { 'content-type': ct }, body: '{"jobType":"ct-ok"}' });
      expect(res.status, ct).toBe(201);
    }
  });
});

describe('wrong types, ranges and shapes', () => {
  it.each([
    ['null body', null, ''],
    ['array body', [{ jobType: 'a' }], ''],
    ['string body', 'a', ''],
    ['missing jobType', { payload: {} }, 'jobType'],
    ['numeric jobType', { jobType: 5 }, 'jobType'],
    ['unknown field', { jobType: 'a', colour: 'red' }, 'colour'],
    ['string priority', { jobType: 'a', priority: '5' }, 'priority'],
    ['float priority', { jobType: 'a', priority: 1.5 }, 'priority'],
    ['huge priority', { jobType: 'a', priority: 2 ** 53 + 2 }, 'priority'],
    ['priority above the bound', { jobType: 'a', priority: 1_000_001 }, 'priority'],
    ['zero maxAttempts', { jobType: 'a', maxAttempts: 0 }, 'maxAttempts'],
    ['negative maxAttempts', { jobType: 'a', maxAttempts: -1 }, 'maxAttempts'],
    ['string maxAttempts', { jobType: 'a', maxAttempts: '3' }, 'maxAttempts'],
    ['huge maxAttempts', { jobType: 'a', maxAttempts: 1e20 }, 'maxAttempts'],
    ['negative delayMs', { jobType: 'a', delayMs: -5 }, 'delayMs'],
    ['runAt and delayMs', { jobType: 'a', runAt: '2030-01-01T00:00:00Z', delayMs: 5 }, 'delayMs'],
    ['runAt not a date', { jobType: 'a', runAt: 'yesterday' }, 'runAt'],
    ['runAt impossible date', { jobType: 'a', runAt: '2030-13-45T00:00:00Z' }, 'runAt'],
    ['runAt without offset', { jobType: 'a', runAt: '2030-01-01T00:00:00' }, 'runAt'],
    ['runAt beyond year 9999', { jobType: 'a', runAt: '+010000-01-01T00:00:00Z' }, 'runAt'],
    ['runAt as a number', { jobType: 'a', runAt: 1700000000000 }, 'runAt'],
    ['null queue', { jobType: 'a', queue: null }, 'queue'],
    ['empty idempotencyKey', { jobType: 'a', idempotencyKey: '' }, 'idempotencyKey'],
  ])('%s -> 400 INVALID_ARGUMENT naming the field', async (_name, body, path) => {
    const res = await rejectsEnqueue(JSON.stringify(body), 400, 'INVALID_ARGUMENT');
    expect(field(res)).toBe(path);
    if (path) expect(res.error.message).toContain(path);
  });

  it('1e309 (Infinity after parsing) -> 400, in a field or deep in the payload', async () => {
    await rejectsEnqueue('{"jobType":"a","priority":1e309}', 400, 'INVALID_ARGUMENT');
    const res = await rejectsEnqueue('{"jobType":"a","payload":{"x":[1,-1e400]}}', 400, 'INVALID_ARGUMENT');
    expect(field(res)).toBe('payload.x.1');
  });

  it.each([
    ['an offset carrying runAt into year 10000', '9999-12-31T23:00:00-01:00'],
    ['an offset carrying runAt back into year 0', '0001-01-01T00:30:00+01:00'],
  ])('%s -> 400 naming runAt, on POST /api/jobs and /api/jobs/batch, nothing written', async (_name, runAt) => {
    const one = await rejectsEnqueue(JSON.stringify({ jobType: 'noop', runAt }), 400, 'INVALID_ARGUMENT');
    expect(field(one)).toBe('runAt');
    expect(one.error.message).toContain('must be from 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z');
    const before = await countJobs(db);
    const body = JSON.stringify({ jobs: [{ jobType: 'noop' }, { jobType: 'noop', runAt }] });
    const batch = await expectError(
      await api.raw('/api/jobs/batch', { method: 'POST', headers: JSON_HEADERS, body }),
      400,
      'INVALID_ARGUMENT',
    );
    expect(field(batch)).toBe('jobs.1.runAt');
    expect(await countJobs(db)).toBe(before);
  });

  it('a far-future runAt (9999-12-31) is stored as given', async () => {
    const res = await api.client.api.jobs.$post({ json: { jobType: 'far', runAt: '9999-12-31T23:59:59.999Z' } });
    const job = await okJson(res, 201);
    expect(job.runAt).toBe('9999-12-31T23:59:59.999Z');
    const row = await db.query<{ y: number }>(
      `SELECT extract(year FROM run_at AT TIME ZONE 'UTC')::int AS y FROM baton.jobs WHERE id = $1`,
      [job.id],
    );
    expect(row.rows[0]!.y).toBe(9999);
  });
});

describe('names', () => {
  it.each([
    ['path traversal', '../etc'],
    ['encoded traversal', '%2e%2e'],
    ['Cyrillic homoglyph', 'q\u0435ue'],
    ['zero-width space', 'q\u200bue'],
    ['leading whitespace', ' mail'],
    ['SQL', "' OR 1=1 --"],
    ['too long (10k chars)', 'q'.repeat(10_000)],
    ['empty', ''],
    ['a lone slash', '/'],
    ['a doubled slash', 'a//b'],
    ['a leading slash', '/a'],
    ['a trailing slash', 'a/'],
  ])('queue/jobType/tenantId %s -> 400', async (_name, name) => {
    for (const key of ['queue', 'jobType', 'tenantId']) {
      const res = await rejectsEnqueue(JSON.stringify({ jobType: 'ok', [key]: name }), 400, 'INVALID_ARGUMENT');
      expect(field(res)).toBe(key);
    }
  });

  it('queue names are case-sensitive: Mail and mail are different queues', async () => {
    await api.client.api.jobs.$post({ json: { jobType: 'x', queue: 'Case-Q' } });
    const lower = await okJson(api.client.api.queues[':queue'].depth.$get({ param: { queue: 'case-q' } }));
    expect(lower.counts.pending).toBe(0);
  });

  it('an invalid queue in the depth path or a filter -> 400', async () => {
    for (const queue of ['a b', '/', 'a//b', 'a/']) {
      const res = await api.raw(`/api/queues/${encodeURIComponent(queue)}/depth`);
      expect(field(await expectError(res, 400, 'INVALID_ARGUMENT')), queue).toBe('queue');
      const list = await api.raw(`/api/jobs?queue=${encodeURIComponent(queue)}`);
      expect(field(await expectError(list, 400, 'INVALID_ARGUMENT')), queue).toBe('queue');
    }
  });

  it('a queue with a "/" in its name is addressed by the depth route percent-encoded (a%2Fb)', async () => {
    const res = await api.client.api.jobs.$post({ json: { jobType: 'slashed', queue: 'a/b' } });
    expect(res.status).toBe(201);
    const raw = await api.raw('/api/queues/a%2Fb/depth');
    expect(raw.status).toBe(200);
    expect(await raw.json()).toMatchObject({ queue: 'a/b', counts: { pending: 1 } });
    // The typed client percent-encodes path parameters itself.
    const typed = await api.client.api.queues[':queue'].depth.$get({ param: { queue: 'a/b' } });
    expect(await typed.json()).toMatchObject({ queue: 'a/b', counts: { pending: 1 } });
  });
});

describe('NUL bytes', () => {
  it.each([
    ['jobType', '{"jobType":"a\\u0000b"}'],
    ['queue', '{"jobType":"a","queue":"q\\u0000"}'],
    ['idempotencyKey', '{"jobType":"a","idempotencyKey":"k\\u0000"}'],
    ['a payload string', '{"jobType":"a","payload":{"s":["x","\\u0000"]}}'],
    ['a payload key', '{"jobType":"a","payload":{"k\\u0000":1}}'],
    ['a batch item', '{"jobs":[{"jobType":"a"},{"jobType":"b","payload":"\\u0000"}]}'],
  ])('in %s -> 400, nothing written', async (_name, body) => {
    const before = await countJobs(db);
    const path = body.startsWith('{"jobs"') ? '/api/jobs/batch' : '/api/jobs';
    await expectError(await api.raw(path, { method: 'POST', headers: JSON_HEADERS, body }), 400, 'INVALID_ARGUMENT');
    expect(await countJobs(db)).toBe(before);
  });

  it('in a query parameter -> 400', async () => {
    await expectError(await api.raw('/api/jobs?queue=a%00b'), 400, 'INVALID_ARGUMENT');
  });
});

describe('pathological sizes', () => {
  it('100k-deep arrays and objects -> 400 without crashing the server', async () => {
    const deepArray = `{"jobType":"a","payload":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const deepObject = `{"jobType":"a","payload":${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}}`;
    await rejectsEnqueue(deepArray, 400, 'INVALID_ARGUMENT');
    await rejectsEnqueue(deepObject, 400, 'INVALID_ARGUMENT');
    expect((await api.client.healthz.$get()).status).toBe(200);
  });

  it('a body over the limit with Content-Length -> 413, nothing written', async () => {
    const big = JSON.stringify({ jobType: 'a', payload: 'x'.repeat(LIMIT) });
    const before = await countJobs(db);
    const res = await api.raw('/api/jobs', { method: 'POST', headers: JSON_HEADERS, body: big });
    const body = await expectError(res, 413, 'PAYLOAD_TOO_LARGE');
    expect(body.error.details).toEqual({ limitBytes: LIMIT });
    expect(await countJobs(db)).toBe(before);
  });

  it('a chunked body that never ends -> 413 once past the limit (the server does not wait for the end)', async () => {
    const { port } = new URL(api.url);
    const chunk = Buffer.from(`{"jobType":"a","payload":"${'y'.repeat(16 * 1024)}`);
    const before = await countJobs(db);
    const req = http.request({
      host: '127.0.0.1',
      port: Number(port),
      method: 'POST',
      path: '/api/jobs',
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    });
    let answered = false;
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      req.on('response', (r) => {
        answered = true;
        resolve(r);
      });
      req.on('error', (err) => (answered ? undefined : reject(err)));
      // Keeps sending until the server answers: a server that buffered the whole body would never answer.
      const pump = (): void => {
        while (!answered) if (!req.write(chunk)) return void req.once('drain', pump);
      };
      pump();
    });
    let text = '';
    for await (const part of res) text += String(part);
    req.destroy();
    expect(res.statusCode).toBe(413);
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
    expect(await countJobs(db)).toBe(before);
  });

  it('a large array within the limit is accepted; a batch over 1000 jobs is refused', async () => {
    const payload = new Array(20_000).fill(0);
    const ok = await api.client.api.jobs.$post({ json: { jobType: 'big-array', payload } });
    expect(ok.status).toBe(201);
    const jobs = Array.from({ length: 1_001 }, () => ({ jobType: 'z' }));
    const before = await countJobs(db);
    const res = await api.raw('/api/jobs/batch', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ jobs }) });
    expect(field(await expectError(res, 400, 'INVALID_ARGUMENT'))).toBe('jobs');
    expect(await countJobs(db)).toBe(before);
  });

  it('a batch with one bad item writes none of them', async () => {
    const before = await countJobs(db);
    const jobs = [{ jobType: 'ok1' }, { jobType: 'ok2' }, { jobType: 'bad name' }];
    const res = await api.raw('/api/jobs/batch', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ jobs }) });
    expect(field(await expectError(res, 400, 'INVALID_ARGUMENT'))).toBe('jobs.2.jobType');
    const empty = await api.raw('/api/jobs/batch', { method: 'POST', headers: JSON_HEADERS, body: '{"jobs":[]}' });
    await expectError(empty, 400, 'INVALID_ARGUMENT');
    expect(await countJobs(db)).toBe(before);
  });
});
