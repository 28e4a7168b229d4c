// Fuzzing every route (fast-check): arbitrary methods, path parameters, query
// strings, content types and bodies (JSON values, near-valid job specs, raw
// bytes). The server must never answer 5xx, every error must have the error
// shape, and no body may carry a stack trace or SQL text.

import fc from 'fast-check';
import { beforeAll, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { useApi } from './harness.ts';

const db = useTestDatabase();
const api = useApi(db, { app: { bodyLimitBytes: 64 * 1024 } });
const knownIds: string[] = [];

beforeAll(async () => {
  for (const state of ['pending', 'running', 'succeeded', 'dead_lettered', 'cancelled'] as const) {
    knownIds.push(await insertJob(db.pool, { state, jobType: 'fuzz', queue: 'fuzz' }));
  }
});

/** Per property; total time stays well under a minute on a loaded 2-core machine. */
const RUNS = Number(process.env.BATON_FUZZ_RUNS ?? 400);

const ROUTES: Array<[method: string, path: string]> = [
  ['POST', '/api/jobs'],
  ['POST', '/api/jobs/batch'],
  ['GET', '/api/jobs'],
  ['GET', '/api/jobs/{id}'],
  ['POST', '/api/jobs/{id}/replay'],
  ['POST', '/api/jobs/{id}/cancel'],
  ['POST', '/api/dlq/replay'],
  ['GET', '/api/queues'],
  ['GET', '/api/queues/{queue}/depth'],
  ['GET', '/api/workers'],
  ['GET', '/metrics'],
  ['GET', '/healthz'],
  ['GET', '/readyz'],
  ['GET', '/'],
];

const STACK = /\n\s+at |\bat [^\s"]+ \(|node_modules|\.ts:\d+:\d+/;
const SQL = /\b(select|insert|update|delete)\b[\s\S]*\b(from|into|set|where)\b|SQLSTATE|syntax error at/i;

const nasty = fc.constantFrom("' OR 1=1 --", '"; DROP TABLE jobs; --', '$$', '\\', '%', '_', '\u0000', '../', '%2e%2e', '\u200b', 'ｑ', '');
const anyString = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), nasty);
const segment = fc.oneof(
  fc.constantFrom(...['1', '0', '-1', '9223372036854775807', '9223372036854775808', 'abc', '1e3', ' 1', 'fuzz', 'default']),
  fc.integer().map(String),
  anyString,
);
const queryValue = fc.oneof(
  anyString,
  fc.integer().map(String),
  fc.double().map(String),
  fc.constantFrom('pending', 'dead_lettered', '500', '501'),
);
const query = fc.oneof(
  fc.constant(''),
  fc.dictionary(fc.constantFrom('state', 'tenantId', 'queue', 'jobType', 'limit', 'offset'), queryValue, { maxKeys: 4 }),
  fc.dictionary(anyString, queryValue, { maxKeys: 3 }),
);
const anyValue = fc.oneof(fc.jsonValue(), anyString, fc.double(), fc.integer(), fc.constant(null), fc.boolean());
const DAY_MS = 86_400_000;
/** ISO 8601 text of `ms` as seen at UTC offset `offsetMin`, or '' when its local year has no four digits. */
function isoAtOffset(ms: number, offsetMin: number): string {
  const local = new Date(ms + offsetMin * 60_000).toISOString();
  if (!/^\d{4}-/.test(local)) return '';
  const sign = offsetMin < 0 ? '-' : '+';
  const abs = Math.abs(offsetMin);
  return `${local.slice(0, 19)}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
/** Instants a day either side of the first and last instant the engine accepts, at any offset. */
const runAtNearBounds = fc
  .tuple(
    fc.constantFrom(Date.parse('0001-01-01T00:00:00Z'), Date.parse('9999-12-31T23:59:59.999Z')),
    fc.integer({ min: -DAY_MS, max: DAY_MS }),
    fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }),
  )
  .map(([bound, delta, offset]) => isoAtOffset(bound + delta, offset));
const runAt = fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom('9999-12-31T23:00:00-01:00', '0001-01-01T00:30:00+01:00', '9999-12-31T23:59:59.999Z', '0001-01-01T00:00:00Z'),
  runAtNearBounds,
  anyString,
  anyValue,
);
/** Job specs that are nearly valid: right keys, values valid or wrong. */
const spec = fc.record(
  {
    jobType: fc.oneof(fc.constantFrom('noop', 'fuzz', 'a.b:c/d'), anyString, anyValue),
    payload: fc.oneof(fc.jsonValue(), anyValue),
    queue: fc.oneof(fc.constantFrom('fuzz', 'default'), anyString, anyValue),
    tenantId: fc.oneof(fc.constant('t1'), anyString, anyValue),
    priority: fc.oneof(fc.integer(), fc.double(), fc.constantFrom(2 ** 31, -(2 ** 53), 1e21), anyValue),
    runAt,
    delayMs: fc.oneof(fc.nat(), fc.integer(), fc.double(), anyValue),
    maxAttempts: fc.oneof(fc.integer({ min: -2, max: 1002 }), anyValue),
    idempotencyKey: fc.oneof(anyString, anyValue),
    extra: anyValue,
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  fc.jsonValue().map((v) => JSON.stringify(v) ?? ''),
  spec.map((s) => JSON.stringify(s)),
  fc.array(spec, { maxLength: 5 }).map((jobs) => JSON.stringify({ jobs })),
  fc.uint8Array({ maxLength: 512 }),
  anyString,
);
const contentType = fc.oneof(
  fc.constant('application/json'),
  fc.constant('application/json; charset=utf-8'),
  fc.constant(undefined),
  fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', 'multipart/form-data'),
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 }),
);
const method = fc.oneof(fc.constant(undefined), fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'));

const request = fc.record({
  route: fc.constantFrom(...ROUTES),
  method,
  id: fc.oneof(fc.constantFrom(...['KNOWN0', 'KNOWN1', 'KNOWN2', 'KNOWN3', 'KNOWN4']), segment),
  queue: segment,
  query,
  body,
  contentType,
});

type Req = typeof request extends fc.Arbitrary<infer T> ? T : never;

function toPath(r: Req): string {
  const id = r.id.startsWith('KNOWN') ? knownIds[Number(r.id.slice(5))]! : r.id;
  const path = r.route[1].replace('{id}', encodeURIComponent(id)).replace('{queue}', encodeURIComponent(r.queue));
  const qs = typeof r.query === 'string' ? r.query : new URLSearchParams(r.query as Record<string, string>).toString();
  return qs ? `${path}?${qs}` : path;
}

async function send(r: Req): Promise<{ status: number; text: string; contentType: string | null }> {
  const m = r.method ?? r.route[0];
  const headers: Record<string, string> = {};
  if (r.contentType !== undefined) headers['content-type'] = r.contentType;
  const init: RequestInit = { method: m, headers };
  if (m !== 'GET' && m !== 'HEAD') init.body = r.body;
  const res = await api.raw(toPath(r), init);
  return { status: res.status, text: await res.text(), contentType: res.headers.get('content-type') };
}

function check(r: Req, res: { status: number; text: string; contentType: string | null }): void {
  const where = `${r.method ?? r.route[0]} ${toPath(r)} -> ${res.status} ${res.text.slice(0, 300)}`;
  expect(res.status, where).toBeLessThan(500);
  expect(res.text, where).not.toMatch(STACK);
  if (res.status >= 400) {
    expect(res.contentType, where).toMatch(/^application\/json/);
    const parsed = JSON.parse(res.text) as { error?: { code?: unknown; message?: unknown } };
    expect(typeof parsed.error?.code, where).toBe('string');
    expect(typeof parsed.error?.message, where).toBe('string');
    expect(String(parsed.error?.message), where).not.toMatch(SQL);
  }
}

it('never answers 5xx or leaks a stack, whatever arrives on any route', async () => {
  await fc.assert(
    fc.asyncProperty(request, async (r) => {
      check(r, await send(r));
    }),
    { numRuns: RUNS * 3 },
  );
  expect((await api.raw('/healthz')).status).toBe(200);
}, 120_000);

it('near-valid job specs are either created (201/200) or refused with 400, never half-written', async () => {
  await fc.assert(
    fc.asyncProperty(spec, async (s) => {
      const res = await api.raw('/api/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(s) });
      const text = await res.text();
      expect([200, 201, 400], `${JSON.stringify(s)} -> ${res.status} ${text}`).toContain(res.status);
      if (res.status === 201) {
        const job = JSON.parse(text) as { id: string; jobType: string };
        const row = await db.query<{ job_type: string }>(`SELECT job_type FROM baton.jobs WHERE id = $1`, [job.id]);
        expect(row.rows[0]?.job_type).toBe(job.jobType);
      }
    }),
    { numRuns: RUNS },
  );
}, 120_000);

it('a runAt near the first or last accepted instant, at any offset, is stored exactly or refused with 400, on both routes', async () => {
  const specWithRunAt = fc.record({ jobType: fc.constantFrom('noop', 'fuzz'), runAt: fc.oneof(runAtNearBounds, runAt) });
  await fc.assert(
    fc.asyncProperty(specWithRunAt, fc.boolean(), async (s, batch) => {
      const res = await api.raw(batch ? '/api/jobs/batch' : '/api/jobs', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(batch ? { jobs: [s] } : s),
      });
      const text = await res.text();
      expect([201, 400], `${JSON.stringify(s)} -> ${res.status} ${text}`).toContain(res.status);
      if (res.status === 201) {
        const parsed = JSON.parse(text) as { id: string } | { results: Array<{ job: { id: string } }> };
        const id = 'results' in parsed ? parsed.results[0]!.job.id : parsed.id;
        const row = await db.query<{ run_at: Date }>(`SELECT run_at FROM baton.jobs WHERE id = $1`, [id]);
        expect(row.rows[0]!.run_at.getTime()).toBe(new Date(s.runAt as string).getTime());
      }
    }),
    { numRuns: RUNS },
  );
}, 120_000);
