// The OpenAPI document at /openapi.json: valid OpenAPI 3.1 (a real validator),
// every route of the app in it and nothing else, and real answers of a server on
// this file's database, a success and an error of every route, matching the
// schemas the document gives for their status.

import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { type JsonObject, openApiPath } from '../../src/http/openapi.ts';
import { apiDocument, RESOURCES } from '../../src/http/openapi-routes.ts';
import type { RouteSpec } from '../../src/http/route-spec.ts';
import { type Baton, createBaton, TerminalError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob, insertWorker } from '../helpers/factory.ts';
import { waitFor } from '../helpers/wait.ts';
import { JSON_HEADERS, requestWithHost, useApi } from './harness.ts';

const db = useTestDatabase();
const TOKEN = 'openapi-test-token';
const api = useApi(db);
/** The same API with a token required. */
const guarded = useApi(db, { app: { apiToken: TOKEN } });
/** The same API with API keys. */
const keyed = useApi(db, { withApiKeys: true });
let worker: Baton;
type Doc = { paths: Record<string, Record<string, JsonObject>> };
/** The served documents, every $ref resolved: `api`'s, and `guarded`'s (which says where the token is needed). */
let resolved: Doc;
let resolvedGuarded: Doc;
let resolvedKeyed: Doc;

type Op = { parameters: JsonObject[]; responses: Record<string, { content: Record<string, { schema: JsonObject }> }> };
const operation = (route: string, doc = resolved): Op | undefined => {
  const [method, path] = route.split(' ') as [string, string];
  return doc.paths[openApiPath(path)]?.[method.toLowerCase()] as Op | undefined;
};

async function validOpenApi(doc: unknown): Promise<Validator> {
  const validator = new Validator();
  const res = await validator.validate(doc as Record<string, unknown>);
  expect(res.errors, JSON.stringify(res.errors, null, 1)?.slice(0, 2000)).toBeUndefined();
  expect(res.valid).toBe(true);
  expect(validator.version).toBe('3.1');
  specRules(doc as SpecDoc);
  return validator;
}

type SpecDoc = { tags: Array<{ name: string }>; paths: Record<string, Record<string, { operationId: string; tags: string[] }>> };
/**
 * The specification's rules a JSON Schema cannot say, which the validator above therefore
 * does not check: tag names are unique (OpenAPI 3.1, Tag Object: "Each tag name in the list
 * MUST be unique"), operationIds are unique, and every operation's tag is declared.
 */
function specRules(doc: SpecDoc): void {
  const tags = doc.tags.map((t) => t.name);
  expect(
    tags.filter((t, i) => tags.indexOf(t) !== i),
    'repeated tag names',
  ).toEqual([]);
  const ops = Object.values(doc.paths).flatMap((methods) => Object.values(methods));
  const ids = ops.map((o) => o.operationId);
  expect(
    ids.filter((id, i) => ids.indexOf(id) !== i),
    'repeated operationIds',
  ).toEqual([]);
  expect(
    [...new Set(ops.flatMap((o) => o.tags))].filter((t) => !tags.includes(t)),
    'undeclared tags',
  ).toEqual([]);
}

// Strict: an unknown keyword or a type-less keyword in a schema is an error; every schema
// is also checked against the JSON Schema 2020-12 meta-schema when compiled.
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
// ajv-formats is CommonJS: its function is the default export's `default`.
(addFormats as unknown as { default: (a: Ajv2020) => void }).default(ajv);
const compiled = new Map<unknown, ValidateFunction>();
const compile = (schema: JsonObject): ValidateFunction => {
  const known = compiled.get(schema);
  if (known) return known;
  const v = ajv.compile(schema);
  compiled.set(schema, v);
  return v;
};

/** Routes ('GET /api/jobs/:id') whose success, and whose error, a test has checked against the document. */
const checked = { ok: new Set<string>(), error: new Set<string>() };

/** Asserts that `doc` lists `res`'s status for `route` and that its body matches that schema. */
async function expectDocumented(route: string, res: Response, doc = resolved): Promise<any> {
  const text = await res.text();
  const op = operation(route, doc);
  expect(op, `${route} is in the document`).toBeDefined();
  const documented = op!.responses[String(res.status)];
  expect(documented, `${route} answered ${res.status}, which the document does not list: ${text.slice(0, 300)}`).toBeDefined();
  // An answer of several possible types (the console's files) must be one of them.
  const types = Object.entries(documented!.content);
  const [contentType, media] = types.find(([type]) => res.headers.get('content-type')?.startsWith(type)) ?? types[0]!;
  expect(res.headers.get('content-type')).toContain(contentType);
  const body: unknown = contentType === 'application/json' ? JSON.parse(text) : text;
  const validate = compile(media.schema);
  expect(validate(body), `${route} ${res.status}: ${ajv.errorsText(validate.errors).slice(0, 1000)}\n${text.slice(0, 500)}`).toBe(true);
  (res.status < 400 ? checked.ok : checked.error).add(route);
  return body;
}

const post = (path: string, body?: unknown, headers: Record<string, string> = JSON_HEADERS) =>
  api.raw(path, { method: 'POST', headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

beforeAll(async () => {
  worker = createBaton({
    connectionString: db.url,
    poolSize: 2,
    queues: { oa: 1 },
    handlers: {
      works: () => ({ ok: true }),
      fails: () => {
        throw new TerminalError('refused');
      },
    },
  });
  await worker.start();
  resolved = (await validOpenApi(await (await api.raw('/openapi.json')).json())).resolveRefs() as Doc;
  resolvedGuarded = (await validOpenApi(await (await guarded.raw('/openapi.json')).json())).resolveRefs() as Doc;
  resolvedKeyed = (await validOpenApi(await (await keyed.raw('/openapi.json')).json())).resolveRefs() as Doc;
});
afterAll(async () => {
  await worker?.stop();
});

describe('the document', () => {
  it('is valid OpenAPI 3.1 with and without a token, and every schema in it is valid JSON Schema 2020-12', async () => {
    const open = apiDocument({ bearer: false }) as { components: JsonObject };
    expect(open.components.securitySchemes).toBeUndefined();
    await validOpenApi(open);
    const withToken = resolvedGuarded.paths;
    expect(withToken['/api/jobs']!.get!.security).toEqual([{ bearerAuth: [] }]);
    expect(withToken['/healthz']!.get!.security).toBeUndefined();
    expect(resolved.paths['/api/jobs']!.get!.security).toBeUndefined();
    for (const [path, ops] of Object.entries(resolved.paths)) {
      for (const [method, op] of Object.entries(ops) as Array<
        [string, Op & { requestBody?: { content: Record<string, { schema: JsonObject }> } }]
      >) {
        const schemas = [
          ...op.parameters.map((p) => p.schema as JsonObject),
          ...Object.values(op.requestBody?.content ?? {}).map((m) => m.schema),
          ...Object.values(op.responses).flatMap((r) => Object.values(r.content).map((m) => m.schema)),
        ];
        for (const schema of schemas) expect(() => compile(schema), `${method} ${path}`).not.toThrow();
        const placeholders = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
        expect(
          op.parameters.filter((p) => p.in === 'path').map((p) => p.name),
          `${method} ${path}`,
        ).toEqual(placeholders);
      }
    }
  });

  it('has every route the app registers, with its method, and no other', () => {
    const app = createApp(api.baton, { metrics: false });
    const registered = new Set(app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${openApiPath(r.path)}`));
    const documented = Object.entries(resolved.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual([...registered].sort());
  });

  it('has every route the app registers declared once, and the document lists exactly those declarations', () => {
    const app = createApp(api.baton, { metrics: false });
    // routes().add puts the declaration on the route's first handler (route-spec.ts).
    const specs = app.routes.flatMap((r) => {
      const spec = (r.handler as { spec?: RouteSpec }).spec;
      return spec ? [spec] : [];
    });
    const keyOf = (method: string, path: string) => `${method.toUpperCase()} ${openApiPath(path)}`;
    const registered = new Set(app.routes.filter((r) => r.method !== 'ALL').map((r) => keyOf(r.method, r.path)));
    expect(specs.map((s) => keyOf(s.method, s.path)).sort()).toEqual([...registered].sort());
    const listed = RESOURCES.flatMap((r) => r.routes);
    expect(new Set(listed)).toEqual(new Set(specs));
    expect(listed).toHaveLength(specs.length);
  });

  it('is served like the console page: no token needed, but the Host is checked', async () => {
    expect((await guarded.raw('/openapi.json')).status).toBe(200);
    await expectDocumented('GET /openapi.json', await api.raw('/openapi.json'));
    await expectDocumented('GET /openapi.json', await requestWithHost(api.url, 'evil.example', '/openapi.json'));
  });
});

describe('real answers match the document', () => {
  it('POST /api/jobs', async () => {
    const created = await expectDocumented(
      'POST /api/jobs',
      await post('/api/jobs', { jobType: 'works', queue: 'oa', idempotencyKey: 'k1' }),
    );
    expect(created.warnings).toEqual([]);
    await expectDocumented('POST /api/jobs', await post('/api/jobs', { jobType: 'works', queue: 'oa', idempotencyKey: 'k1' }));
    await expectDocumented('POST /api/jobs', await post('/api/jobs', { jobType: 'not deployed', queue: 'nobody' }));
    await expectDocumented('POST /api/jobs', await post('/api/jobs', { jobType: '' }));
    await expectDocumented('POST /api/jobs', await api.raw('/api/jobs', { method: 'POST', headers: JSON_HEADERS, body: '{' }));
  });

  it('POST /api/jobs/batch', async () => {
    const body = {
      jobs: [
        { jobType: 'works', queue: 'oa' },
        { jobType: 'x', queue: 'nobody' },
      ],
    };
    await expectDocumented('POST /api/jobs/batch', await post('/api/jobs/batch', body));
    await expectDocumented('POST /api/jobs/batch', await post('/api/jobs/batch', body, { 'content-type': 'text/plain' }));
  });

  it('GET /api/jobs/:id in every state, with real attempt errors and results', async () => {
    const enqueue = async (jobType: string) => ((await (await post('/api/jobs', { jobType, queue: 'oa' })).json()) as { id: string }).id;
    const [ok, failed] = [await enqueue('works'), await enqueue('fails')];
    const ids = {
      pending: await insertJob(db.pool, { queue: 'elsewhere' }),
      running: await insertJob(db.pool, { state: 'running', queue: 'elsewhere' }),
      leased: await insertJob(db.pool, { state: 'leased', queue: 'elsewhere' }),
      cancelled: await insertJob(db.pool, { state: 'cancelled', queue: 'elsewhere' }),
    };
    for (const [id, state] of [
      [ok, 'succeeded'],
      [failed, 'dead_lettered'],
    ] as const) {
      const stateOf = async () => ((await (await api.raw(`/api/jobs/${id}`)).json()) as { state: string }).state;
      await waitFor(async () => (await stateOf()) === state, { message: `job ${id} to be ${state}` });
    }
    const dead = await expectDocumented('GET /api/jobs/:id', await api.raw(`/api/jobs/${failed}`));
    expect(dead.lastError).toMatchObject({ kind: 'terminal', message: 'refused' });
    expect((await expectDocumented('GET /api/jobs/:id', await api.raw(`/api/jobs/${ok}`))).result).toEqual({ ok: true });
    for (const [state, id] of Object.entries(ids)) {
      expect((await expectDocumented('GET /api/jobs/:id', await api.raw(`/api/jobs/${id}`))).state).toBe(state);
    }
    await expectDocumented('GET /api/jobs/:id', await api.raw('/api/jobs/999999999'));
  });

  it('GET /api/jobs', async () => {
    const page = await expectDocumented('GET /api/jobs', await api.raw('/api/jobs?limit=500'));
    expect(new Set(page.jobs.map((j: { state: string }) => j.state)).size).toBeGreaterThanOrEqual(5);
    await expectDocumented('GET /api/jobs', await api.raw('/api/jobs?limit=0'));
    await expectDocumented('GET /api/jobs', await api.raw('/api/jobs?nope=1'));
  });

  it('POST /api/jobs/:id/replay and /cancel', async () => {
    const dead = await insertJob(db.pool, { state: 'dead_lettered', queue: 'elsewhere' });
    const pending = await insertJob(db.pool, { queue: 'elsewhere' });
    await expectDocumented('POST /api/jobs/:id/replay', await post(`/api/jobs/${dead}/replay`));
    await expectDocumented('POST /api/jobs/:id/replay', await post(`/api/jobs/${pending}/replay`));
    await expectDocumented('POST /api/jobs/:id/cancel', await post(`/api/jobs/${pending}/cancel`, {}));
    await expectDocumented('POST /api/jobs/:id/cancel', await post(`/api/jobs/${pending}/cancel`));
    await expectDocumented('POST /api/jobs/:id/cancel', await post(`/api/jobs/${pending}/cancel`, { why: 1 }));
    // A running job: 202, the job as it stands with its cancel request.
    const running = await insertJob(db.pool, { state: 'running', queue: 'elsewhere' });
    const asked = await post(`/api/jobs/${running}/cancel`);
    expect(asked.status).toBe(202);
    await expectDocumented('POST /api/jobs/:id/cancel', asked);
  });

  it('POST /api/jobs/:id/run-now and /api/jobs/bulk', async () => {
    const pending = await insertJob(db.pool, { queue: 'elsewhere', runAt: { inMs: 3_600_000 } });
    const dead = await insertJob(db.pool, { state: 'dead_lettered', queue: 'elsewhere' });
    await expectDocumented('POST /api/jobs/:id/run-now', await post(`/api/jobs/${pending}/run-now`));
    await expectDocumented('POST /api/jobs/:id/run-now', await post(`/api/jobs/${dead}/run-now`));
    await expectDocumented('POST /api/jobs/:id/run-now', await post('/api/jobs/999999999/run-now'));
    const bulk = await expectDocumented('POST /api/jobs/bulk', await post('/api/jobs/bulk', { action: 'replay', ids: [dead, pending] }));
    expect(bulk.results.map((r: { ok: boolean }) => r.ok)).toEqual([true, false]);
    await expectDocumented('POST /api/jobs/bulk', await post('/api/jobs/bulk', { action: 'replay', ids: [] }));
  });

  it('POST /api/queues/:queue/pause and /resume, GET /api/stats', async () => {
    await insertJob(db.pool, { queue: 'oa-paused' });
    await expectDocumented('POST /api/queues/:queue/pause', await post('/api/queues/oa-paused/pause'));
    await expectDocumented('POST /api/queues/:queue/pause', await post('/api/queues/never-heard-of/pause'));
    const stats = await expectDocumented('GET /api/stats', await api.raw('/api/stats?windowSeconds=60'));
    expect(stats.queues.find((q: { queue: string }) => q.queue === 'oa-paused').paused).toBe(true);
    await expectDocumented('GET /api/stats', await api.raw('/api/stats?windowSeconds=0'));
    await waitFor(async () => ((await (await api.raw('/api/stats/history')).json()) as { samples: unknown[] }).samples.length > 0, {
      message: 'a sample',
    });
    const history = await expectDocumented('GET /api/stats/history', await api.raw('/api/stats/history'));
    expect(history.samples.length).toBeGreaterThan(0);
    await expectDocumented('GET /api/stats/history', await api.raw('/api/stats/history?since=soon'));
    await expectDocumented('POST /api/queues/:queue/resume', await post('/api/queues/oa-paused/resume'));
    await expectDocumented('POST /api/queues/:queue/resume', await post('/api/queues/never-heard-of/resume'));
  });

  it('POST /api/dlq/replay', async () => {
    await insertJob(db.pool, { state: 'dead_lettered', queue: 'elsewhere' });
    const res = await expectDocumented('POST /api/dlq/replay', await post('/api/dlq/replay?queue=elsewhere'));
    expect(res.replayed).toBe(1);
    await expectDocumented(
      'POST /api/dlq/replay',
      await post('/api/dlq/replay', undefined, { ...JSON_HEADERS, origin: 'http://evil.example' }),
    );
    await expectDocumented('POST /api/dlq/replay', await post('/api/dlq/replay?limit=1001'));
  });

  it('/api/workflows: start, read, list, cancel, replay and events', async () => {
    api.baton.workflow('oa-flow', (ctx) => ctx.waitForEvent('w', 'go'));
    const started = await expectDocumented(
      'POST /api/workflows/:name/runs',
      await post('/api/workflows/oa-flow/runs', { input: { n: 1 } }),
    );
    const id = started.run.id as string;
    await expectDocumented('POST /api/workflows/:name/runs', await post('/api/workflows/unknown/runs', {}));
    await expectDocumented('GET /api/workflows/runs/:id', await api.raw(`/api/workflows/runs/${id}`));
    await expectDocumented('GET /api/workflows/runs/:id', await api.raw('/api/workflows/runs/x'));
    const page = await expectDocumented('GET /api/workflows/runs', await api.raw('/api/workflows/runs?name=oa-flow&state=running'));
    expect(page.runs.map((r: { id: string }) => r.id)).toEqual([id]);
    await expectDocumented('GET /api/workflows/runs', await api.raw('/api/workflows/runs?state=nope'));
    await expectDocumented('POST /api/workflows/runs/:id/events/:name', await post(`/api/workflows/runs/${id}/events/go`, { payload: 1 }));
    await expectDocumented('POST /api/workflows/runs/:id/events/:name', await post('/api/workflows/runs/999999/events/go', {}));
    await expectDocumented('POST /api/workflows/runs/:id/replay', await post(`/api/workflows/runs/${id}/replay`));
    await expectDocumented('POST /api/workflows/runs/:id/cancel', await post(`/api/workflows/runs/${id}/cancel`));
    await expectDocumented('POST /api/workflows/runs/:id/cancel', await post(`/api/workflows/runs/${id}/cancel`));
    await expectDocumented('POST /api/workflows/runs/:id/replay', await post(`/api/workflows/runs/${id}/replay`));
  });

  it('/api/outbox: stats, list, read, replay one and a page of dead letters', async () => {
    const { message } = await api.baton.outbox.record({ destination: 'oa-dest', topic: 't', messageKey: 'oa-1', headers: { 'X-A': '1' } });
    const killed = () =>
      db.query(
        `UPDATE ${db.schema}.outbox SET state = 'dead_lettered', dead_letter_reason = 'rejected', finished_at = now(),
           last_error = '{"name":"PublishError","message":"no","at":"2026-01-01T00:00:00.000Z"}' WHERE id = $1`,
        [message.id],
      );
    await expectDocumented('GET /api/outbox/stats', await api.raw('/api/outbox/stats'));
    await expectDocumented('GET /api/outbox/stats', await api.raw('/api/outbox/stats?tenantId=a%20b'));
    await expectDocumented('GET /api/outbox/messages', await api.raw('/api/outbox/messages?destination=oa-dest'));
    await expectDocumented('GET /api/outbox/messages', await api.raw('/api/outbox/messages?state=x'));
    await expectDocumented('GET /api/outbox/messages/:id', await api.raw(`/api/outbox/messages/${message.id}`));
    await expectDocumented('GET /api/outbox/messages/:id', await api.raw('/api/outbox/messages/x'));
    await expectDocumented('POST /api/outbox/messages/:id/replay', await post(`/api/outbox/messages/${message.id}/replay`));
    await killed();
    await expectDocumented('GET /api/outbox/messages', await api.raw('/api/outbox/messages?state=dead_lettered'));
    await expectDocumented('POST /api/outbox/messages/:id/replay', await post(`/api/outbox/messages/${message.id}/replay`));
    await killed();
    await expectDocumented('POST /api/outbox/dlq/replay', await post('/api/outbox/dlq/replay?limit=0'));
    await expectDocumented('POST /api/outbox/dlq/replay', await post('/api/outbox/dlq/replay?limit=10&destination=oa-dest'));
  });

  it('GET /api/queues, /api/queues/:queue/depth, /api/workers', async () => {
    await insertWorker(db.pool, 'openapi-worker', { queues: { oa: 2 }, jobTypes: ['works'] });
    expect((await expectDocumented('GET /api/queues', await api.raw('/api/queues'))).queues.length).toBeGreaterThan(0);
    await expectDocumented('GET /api/queues', await requestWithHost(api.url, 'evil.example', '/api/queues'));
    await expectDocumented('GET /api/queues/:queue/depth', await api.raw('/api/queues/oa/depth'));
    await expectDocumented('GET /api/queues/:queue/depth', await api.raw(`/api/queues/${encodeURIComponent('no spaces')}/depth`));
    expect((await expectDocumented('GET /api/workers', await api.raw('/api/workers'))).workers.length).toBeGreaterThan(0);
    await expectDocumented('GET /api/workers', await guarded.raw('/api/workers'), resolvedGuarded);
  });

  it('/api/cron: create, list, read, edit, preview and remove a schedule', async () => {
    const spec = { name: 'oa-nightly', cron: '30 2 * * *', timezone: 'Europe/London', jobType: 'works', queue: 'oa' };
    const created = await expectDocumented('POST /api/cron', await post('/api/cron', spec));
    await expectDocumented('POST /api/cron', await post('/api/cron', spec));
    await expectDocumented('POST /api/cron', await post('/api/cron', { ...spec, timezone: '+02:00' }));
    await expectDocumented('GET /api/cron', await api.raw('/api/cron?limit=10'));
    await expectDocumented('GET /api/cron', await api.raw('/api/cron?limit=0'));
    await expectDocumented('GET /api/cron/:id', await api.raw(`/api/cron/${created.schedule.id}`));
    await expectDocumented('GET /api/cron/:id', await api.raw('/api/cron/999999'));
    const patch = (body: unknown) =>
      api.raw(`/api/cron/${created.schedule.id}`, { method: 'PATCH', headers: JSON_HEADERS, body: JSON.stringify(body) });
    expect((await expectDocumented('PATCH /api/cron/:id', await patch({ paused: true }))).status).toBe('paused');
    await expectDocumented('PATCH /api/cron/:id', await patch({ cron: 'every day' }));
    await expectDocumented(
      'GET /api/cron/preview',
      await api.raw('/api/cron/preview?cron=0%209%20*%20*%20MON&timezone=America/New_York&count=3'),
    );
    await expectDocumented('GET /api/cron/preview', await api.raw('/api/cron/preview?cron=0%209%20*%20*%20MON&timezone=Nowhere'));
    await expectDocumented(
      'DELETE /api/cron/:id',
      await api.raw(`/api/cron/${created.schedule.id}`, { method: 'DELETE', headers: JSON_HEADERS }),
    );
    await expectDocumented(
      'DELETE /api/cron/:id',
      await api.raw(`/api/cron/${created.schedule.id}`, { method: 'DELETE', headers: JSON_HEADERS }),
    );
  });

  it('/api/keys: create, list and revoke keys; a tenant key is refused there', async () => {
    const send = (path: string, body: unknown, token?: string) =>
      keyed.raw(path, {
        method: 'POST',
        headers: { ...JSON_HEADERS, ...(token ? { authorization: `Bearer ${token}` } : {}) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    // No key yet: the API is open (loopback), so the first admin key can be made over it.
    const admin = await expectDocumented('POST /api/keys', await send('/api/keys', { role: 'admin', name: 'openapi' }), resolvedKeyed);
    await expectDocumented('POST /api/keys', await send('/api/keys', { role: 'tenant' }, admin.token), resolvedKeyed);
    const tenant = await expectDocumented('POST /api/keys', await send('/api/keys', { tenantId: 'acme' }, admin.token), resolvedKeyed);
    const auth = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
    const listed = await expectDocumented('GET /api/keys', await keyed.raw('/api/keys', auth(admin.token)), resolvedKeyed);
    expect(listed.keys.map((k: { id: string }) => k.id)).toEqual([admin.key.id, tenant.key.id]);
    await expectDocumented('GET /api/keys', await keyed.raw('/api/keys?secret=1', auth(admin.token)), resolvedKeyed);
    await expectDocumented('GET /api/keys', await keyed.raw('/api/keys', auth(tenant.token)), resolvedKeyed);
    await expectDocumented(
      'POST /api/keys/:id/revoke',
      await send('/api/keys/0000000000000000/revoke', undefined, admin.token),
      resolvedKeyed,
    );
    const revoked = await expectDocumented(
      'POST /api/keys/:id/revoke',
      await send(`/api/keys/${tenant.key.id}/revoke`, undefined, admin.token),
      resolvedKeyed,
    );
    expect(revoked.key.revokedAt).toEqual(expect.any(String));
    await expectDocumented('GET /api/keys', await keyed.raw('/api/keys', auth(tenant.token)), resolvedKeyed);
    // The server without keys has the routes, but nothing behind them.
    await expectDocumented('GET /api/keys', await api.raw('/api/keys'));
  });

  it('/api/flow: limits of queues and key patterns, tenant weights, the snapshot', async () => {
    const put = (path: string, body: unknown) => api.raw(path, { method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify(body) });
    await expectDocumented('PUT /api/flow/queues/:queue', await put('/api/flow/queues/oa-flow', { concurrencyLimit: 3, rateLimit: null }));
    await expectDocumented('PUT /api/flow/queues/:queue', await put('/api/flow/queues/oa-flow', { concurrencyLimit: 0, rateLimit: null }));
    await expectDocumented(
      'PUT /api/flow/keys',
      await put('/api/flow/keys', { pattern: 'oa:*', concurrencyLimit: 2, rateLimit: { limit: 5, periodMs: 1000 } }),
    );
    await expectDocumented('PUT /api/flow/keys', await put('/api/flow/keys', { pattern: 'oa:*' }));
    const snap = await expectDocumented('GET /api/flow', await api.raw('/api/flow'));
    expect(snap.keyPatterns).toHaveLength(1);
    await expectDocumented('GET /api/flow', await guarded.raw('/api/flow'), resolvedGuarded);
    const del = (pattern: string) =>
      api.raw(`/api/flow/keys?pattern=${encodeURIComponent(pattern)}`, { method: 'DELETE', headers: JSON_HEADERS });
    await expectDocumented('DELETE /api/flow/keys', await del('oa:*'));
    await expectDocumented('DELETE /api/flow/keys', await del('oa:*'));
    await expectDocumented('PUT /api/flow/tenants/:tenantId', await put('/api/flow/tenants/oa', { weight: 2 }));
    await expectDocumented('PUT /api/flow/tenants/:tenantId', await put('/api/flow/tenants/oa', { weight: 0 }));
    await put('/api/flow/queues/oa-flow', { concurrencyLimit: null, rateLimit: null });
    await put('/api/flow/tenants/oa', { weight: null });
  });

  it('/healthz, /readyz, /metrics and the console page', async () => {
    await expectDocumented('GET /healthz', await api.raw('/healthz'));
    await expectDocumented('GET /readyz', await api.raw('/readyz'));
    api.setStarted(false);
    try {
      await expectDocumented('GET /readyz', await api.raw('/readyz'));
    } finally {
      api.setStarted(true);
    }
    await expectDocumented('GET /metrics', await api.raw('/metrics'));
    await expectDocumented('GET /metrics', await guarded.raw('/metrics'), resolvedGuarded);
    await expectDocumented('GET /', await api.raw('/'));
    await expectDocumented('GET /', await requestWithHost(api.url, 'evil.example', '/'));
    await expectDocumented('GET /console/:file', await api.raw('/console/main.js'));
    await expectDocumented('GET /console/:file', await api.raw('/console/console.css'));
    await expectDocumented('GET /console/:file', await api.raw('/console/nope.js'));
  });

  it('every route: 401 without the token where one is required, 421 for a foreign Host where the Host is checked', async () => {
    for (const [path, ops] of Object.entries(resolved.paths)) {
      for (const method of Object.keys(ops)) {
        const route = `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`;
        const url = path.replace('{id}', '1').replace('{queue}', 'oa');
        const init = { method: method.toUpperCase(), headers: JSON_HEADERS };
        const anonymous = await guarded.raw(url, init);
        if (operation(route, resolvedGuarded)!.responses['401']) expect(anonymous.status, route).toBe(401);
        else expect(anonymous.status, route).not.toBe(401);
        await expectDocumented(route, anonymous, resolvedGuarded);
        const foreign = await requestWithHost(api.url, 'evil.example', url, init.method, JSON_HEADERS);
        if (!['/healthz', '/readyz'].includes(path)) expect(foreign.status, route).toBe(421);
        await expectDocumented(route, foreign);
      }
    }
  });

  it('checked a success and an error of every route (/healthz has no error to provoke)', () => {
    const routes = Object.entries(resolved.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    expect(routes.filter((r) => !checked.ok.has(r))).toEqual([]);
    expect(routes.filter((r) => !checked.error.has(r))).toEqual(['GET /healthz']);
  });
});
