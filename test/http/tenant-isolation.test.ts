// Tenant isolation over HTTP: every route of the app is walked with a tenant key of the WRONG
// tenant ("acme") against another tenant's ("globex") job, dead letter, schedule, run, queue
// and key. Each answer is 403 (an admin route, or naming globex) or 404 with exactly the body
// an id nobody has gets (no existence leak); no answer carries globex's data, and nothing of
// globex's changed. The walk is driven by the app's own route list, so a new route without a
// case here fails the test. Then: what a tenant key can do, and what an admin key sees.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { type ClosableApiKeys, openApiKeys } from '../../src/create-api-keys.ts';
import { createApp } from '../../src/http/app.ts';
import { createBaton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { type ApiHarness, JSON_HEADERS, okJson, startApi } from './harness.ts';

const db = useTestDatabase();
/** In every payload, input and name of globex's: no answer to acme may contain it. */
const MARK = 'globex-secret-7f3a';
/** Ids that name nothing, for the reference 404 bodies. */
const NOBODY = { job: '999999999', schedule: '999999999', run: '999999999', key: 'ffffffffffffffff', message: '999999999' };

let api: ApiHarness;
let keys: ClosableApiKeys;
let acme: string;
let admin: string;
const globex = { job: '', dead: '', schedule: '', run: '', key: '', keyToken: '', message: '' };

beforeAll(async () => {
  keys = openApiKeys({ pool: db.pool, schema: db.schema });
  // No queues worked: globex's jobs stay as they are put.
  api = await startApi(db, { app: { apiKeys: keys }, baton: { queues: {} } });
  acme = (await keys.create({ tenantId: 'acme' })).token;
  admin = (await keys.create({ role: 'admin' })).token;
  const g = await keys.create({ tenantId: 'globex', name: MARK });
  globex.key = g.key.id;
  globex.keyToken = g.token;
  globex.job = await insertJob(db, { tenantId: 'globex', queue: 'globex-q', payload: { MARK } });
  globex.dead = await insertJob(db, { tenantId: 'globex', queue: 'globex-q', state: 'dead_lettered', payload: { MARK } });
  const owner = createBaton({ connectionString: db.url, poolSize: 1, queues: {} });
  owner.workflow('flow', async () => MARK);
  try {
    globex.run = (await owner.startWorkflow('flow', { MARK }, { tenantId: 'globex' })).run.id;
    const s = await owner.cron.upsert({
      tenantId: 'globex',
      name: MARK,
      cron: '0 0 * * *',
      timezone: 'UTC',
      jobType: 'x',
      payload: { MARK },
    });
    globex.schedule = s.schedule.id;
    const m = await owner.outbox.record({
      tenantId: 'globex',
      destination: 'globex-dest',
      topic: MARK,
      messageKey: MARK,
      payload: { MARK },
    });
    globex.message = m.message.id;
  } finally {
    await owner.stop();
  }
});
afterAll(async () => {
  await api?.close();
  await keys?.close();
});

const as = (token: string, method: string, path: string, body?: unknown) =>
  api.raw(path, {
    method,
    headers: { ...(method === 'GET' ? {} : JSON_HEADERS), authorization: `Bearer ${token}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

/** Answers are read as loose JSON in these checks. */
const json = async (res: Promise<Response>): Promise<any> => (await res).json();

type Case = { path: string; body?: unknown } & (
  | { status: 403; code: 'ADMIN_REQUIRED' | 'FORBIDDEN_TENANT' }
  /** 404 with the body the same request gets for `nobody` instead of globex's id. */
  | { status: 404; nobody: string; nobodyBody?: unknown }
  /** Allowed: it answers, but only with acme's (here: no) data. */
  | { status: 200 }
);

/** Every route of the app -> the wrong-tenant requests it gets. */
function cases(): Record<string, Case[]> {
  const g = globex;
  const spec = { jobType: 'x', tenantId: 'globex' };
  const schedule = { name: 'n', cron: '0 0 * * *', timezone: 'UTC', jobType: 'x', tenantId: 'globex' };
  const admin403 = (path: string, body?: unknown): Case[] => [{ path, body, status: 403, code: 'ADMIN_REQUIRED' }];
  const named403 = (path: string, body?: unknown): Case => ({ path, body, status: 403, code: 'FORBIDDEN_TENANT' });
  const jobAction = (action: string): Case[] => [
    { path: `/api/jobs/${g.job}/${action}`, status: 404, nobody: `/api/jobs/${NOBODY.job}/${action}` },
  ];
  const runAction = (action: string): Case[] => [
    { path: `/api/workflows/runs/${g.run}/${action}`, status: 404, nobody: `/api/workflows/runs/${NOBODY.run}/${action}` },
  ];
  return {
    'POST /api/jobs': [
      named403('/api/jobs', spec),
      // Caps are an admin's: a tenant key may not set one, even on a key in its own space.
      admin403('/api/jobs', { jobType: 'x', concurrencyKey: 'vendor:x', concurrencyLimit: 1000 })[0]!,
    ],
    'POST /api/jobs/batch': [
      named403('/api/jobs/batch', { jobs: [{ jobType: 'x' }, spec] }),
      admin403('/api/jobs/batch', { jobs: [{ jobType: 'x' }, { jobType: 'x', concurrencyKey: 'k', concurrencyLimit: 1 }] })[0]!,
    ],
    'POST /api/jobs/bulk': [
      {
        path: '/api/jobs/bulk',
        body: { action: 'cancel', ids: [g.job] },
        status: 200,
      },
    ],
    'GET /api/jobs': [
      named403('/api/jobs?tenantId=globex'),
      { path: '/api/jobs', status: 200 },
      { path: '/api/jobs?queue=globex-q', status: 200 },
    ],
    'GET /api/jobs/:id': [{ path: `/api/jobs/${g.job}`, status: 404, nobody: `/api/jobs/${NOBODY.job}` }],
    'POST /api/jobs/:id/replay': [{ path: `/api/jobs/${g.dead}/replay`, status: 404, nobody: `/api/jobs/${NOBODY.job}/replay` }],
    'POST /api/jobs/:id/cancel': jobAction('cancel'),
    'POST /api/jobs/:id/run-now': jobAction('run-now'),
    'POST /api/dlq/replay': [named403('/api/dlq/replay?tenantId=globex'), { path: '/api/dlq/replay?queue=globex-q', status: 200 }],
    'GET /api/queues': admin403('/api/queues'),
    'GET /api/queues/:queue/depth': admin403('/api/queues/globex-q/depth'),
    'POST /api/queues/:queue/pause': admin403('/api/queues/globex-q/pause'),
    'POST /api/queues/:queue/resume': admin403('/api/queues/globex-q/resume'),
    'GET /api/workers': admin403('/api/workers'),
    'GET /api/stats': admin403('/api/stats'),
    'GET /api/stats/history': admin403('/api/stats/history'),
    'GET /api/flow': admin403('/api/flow'),
    'PUT /api/flow/queues/:queue': admin403('/api/flow/queues/globex-q', { concurrencyLimit: 1, rateLimit: null }),
    'PUT /api/flow/keys': admin403('/api/flow/keys', { pattern: 'globex:*', concurrencyLimit: 1 }),
    'DELETE /api/flow/keys': admin403('/api/flow/keys?pattern=globex%3A*'),
    'PUT /api/flow/tenants/:tenantId': admin403('/api/flow/tenants/globex', { weight: 2 }),
    'POST /api/cron': [named403('/api/cron', schedule)],
    'GET /api/cron': [named403('/api/cron?tenantId=globex'), { path: '/api/cron', status: 200 }],
    'GET /api/cron/preview': [{ path: '/api/cron/preview?cron=0%200%20*%20*%20*&timezone=UTC', status: 200 }],
    'GET /api/cron/:id': [{ path: `/api/cron/${g.schedule}`, status: 404, nobody: `/api/cron/${NOBODY.schedule}` }],
    'PATCH /api/cron/:id': [
      { path: `/api/cron/${g.schedule}`, body: { paused: true }, status: 404, nobody: `/api/cron/${NOBODY.schedule}` },
    ],
    'DELETE /api/cron/:id': [{ path: `/api/cron/${g.schedule}`, status: 404, nobody: `/api/cron/${NOBODY.schedule}` }],
    'GET /api/workflows/runs': [named403('/api/workflows/runs?tenantId=globex'), { path: '/api/workflows/runs?name=flow', status: 200 }],
    'GET /api/workflows/runs/:id': [{ path: `/api/workflows/runs/${g.run}`, status: 404, nobody: `/api/workflows/runs/${NOBODY.run}` }],
    'POST /api/workflows/runs/:id/cancel': runAction('cancel'),
    'POST /api/workflows/runs/:id/replay': runAction('replay'),
    'POST /api/workflows/runs/:id/events/:name': [
      {
        path: `/api/workflows/runs/${g.run}/events/go`,
        body: { payload: 1 },
        status: 404,
        nobody: `/api/workflows/runs/${NOBODY.run}/events/go`,
      },
    ],
    'POST /api/workflows/:name/runs': [named403('/api/workflows/flow/runs', { tenantId: 'globex' })],
    'GET /api/outbox/stats': [named403('/api/outbox/stats?tenantId=globex'), { path: '/api/outbox/stats', status: 200 }],
    'GET /api/outbox/messages': [
      named403('/api/outbox/messages?tenantId=globex'),
      { path: '/api/outbox/messages', status: 200 },
      { path: '/api/outbox/messages?destination=globex-dest', status: 200 },
    ],
    'GET /api/outbox/messages/:id': [
      { path: `/api/outbox/messages/${g.message}`, status: 404, nobody: `/api/outbox/messages/${NOBODY.message}` },
      named403(`/api/outbox/messages/${g.message}?tenantId=globex`),
    ],
    'POST /api/outbox/messages/:id/replay': [
      { path: `/api/outbox/messages/${g.message}/replay`, status: 404, nobody: `/api/outbox/messages/${NOBODY.message}/replay` },
    ],
    'POST /api/outbox/dlq/replay': [named403('/api/outbox/dlq/replay?tenantId=globex'), { path: '/api/outbox/dlq/replay', status: 200 }],
    'POST /api/keys': admin403('/api/keys', { tenantId: 'acme', role: 'admin' }),
    'GET /api/keys': admin403('/api/keys'),
    'POST /api/keys/:id/revoke': admin403(`/api/keys/${g.key}/revoke`),
    'GET /metrics': admin403('/metrics'),
    // Open routes: they hold no tenant's data (checked below all the same).
    'GET /healthz': [{ path: '/healthz', status: 200 }],
    'GET /readyz': [{ path: '/readyz', status: 200 }],
    'GET /openapi.json': [{ path: '/openapi.json', status: 200 }],
    'GET /': [{ path: '/', status: 200 }],
    'GET /console/:file': [{ path: '/console/main.js', status: 200 }],
  };
}

describe('a tenant key of the wrong tenant, on every route', () => {
  it('has a case for every route the app registers', () => {
    const app = createApp(api.baton, { metrics: false });
    const routes = [...new Set(app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${r.path}`))];
    expect(routes.filter((r) => !(r in cases()))).toEqual([]);
    expect(Object.keys(cases()).filter((r) => !routes.includes(r))).toEqual([]);
  });

  it('gets 403 or a 404 indistinguishable from an id nobody has, never globex data, and changes nothing', async () => {
    const before = await snapshot();
    for (const [route, list] of Object.entries(cases())) {
      const method = route.split(' ')[0]!;
      for (const c of list) {
        const res = await as(acme, method, c.path, c.body);
        const text = await res.text();
        const where = `${route} ${c.path}: ${text.slice(0, 300)}`;
        expect(res.status, where).toBe(c.status);
        expect(text, where).not.toContain(MARK);
        expect(text, where).not.toContain('globex');
        if (c.status === 403) expect(JSON.parse(text).error.code, where).toBe(c.code);
        if (c.status === 404) {
          const reference = await (await as(acme, method, c.nobody, c.body)).text();
          expect(withoutIds(text, Object.values(globex)), where).toEqual(withoutIds(reference, Object.values(NOBODY)));
        }
        const listing = ['GET /api/jobs', 'GET /api/cron', 'GET /api/workflows/runs', 'GET /api/outbox/messages'].includes(route);
        if (listing && c.status === 200) {
          const body = JSON.parse(text);
          expect(body.jobs ?? body.schedules ?? body.runs ?? body.messages, where).toEqual([]);
        }
        if (['POST /api/dlq/replay', 'POST /api/outbox/dlq/replay'].includes(route) && c.status === 200) {
          expect(JSON.parse(text).replayed, where).toBe(0);
        }
        if (route === 'GET /api/outbox/stats' && c.status === 200) expect(JSON.parse(text).relay, where).toBeNull();
        if (route === 'POST /api/jobs/bulk') {
          const nobody = await (await as(acme, 'POST', '/api/jobs/bulk', { action: 'cancel', ids: [NOBODY.job] })).text();
          expect(withoutIds(text, [globex.job]), where).toEqual(withoutIds(nobody, [NOBODY.job]));
        }
      }
    }
    expect(await snapshot()).toEqual(before);
  });
});

/** The JSON body with each of `ids` replaced by ID in its strings (a string equal to one, or naming one in a message). */
function withoutIds(text: string, ids: string[]): unknown {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return ids.reduce((s, id) => s.replace(new RegExp(`\\b${id}\\b`, 'g'), 'ID'), v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(JSON.parse(text));
}

/** Everything of globex's the walk must not change, and every row acme could have added. */
async function snapshot() {
  const q = async (sql: string) => (await db.query(sql)).rows;
  return {
    jobs: await q(`SELECT id, tenant_id, state, run_at, replay_count FROM ${db.schema}.jobs ORDER BY id`),
    schedules: await q(`SELECT id, tenant_id, enabled, version FROM ${db.schema}.schedules ORDER BY id`),
    runs: await q(`SELECT id, tenant_id, state FROM ${db.schema}.workflow_runs ORDER BY id`),
    events: await q(`SELECT count(*)::int AS n FROM ${db.schema}.workflow_events`),
    paused: await q(`SELECT queue FROM ${db.schema}.paused_queues`),
    keys: await q(`SELECT id, revoked_at FROM ${db.schema}.api_keys ORDER BY id`),
    outbox: await q(`SELECT id, tenant_id, state, attempt FROM ${db.schema}.outbox ORDER BY id`),
  };
}

describe('what a tenant key can do, and what an admin key sees', () => {
  it('a tenant key enqueues into its tenant (tenantId omitted or its own) and sees only its jobs', async () => {
    const omitted = await json(as(acme, 'POST', '/api/jobs', { jobType: 'x', payload: { n: 1 } }));
    expect(omitted.tenantId).toBe('acme');
    const own = await as(acme, 'POST', '/api/jobs', { jobType: 'x', tenantId: 'acme' });
    expect(own.status).toBe(201);
    const page = await json(as(acme, 'GET', '/api/jobs'));
    expect(page.jobs.map((j: { tenantId: string }) => j.tenantId)).toEqual(['acme', 'acme']);
    expect((await as(acme, 'GET', `/api/jobs/${omitted.id}`)).status).toBe(200);
    expect((await as(acme, 'POST', `/api/jobs/${omitted.id}/cancel`)).status).toBe(200);
    const bulk = await json(as(acme, 'POST', '/api/jobs/bulk', { action: 'runNow', ids: [globex.job, omitted.id, 'x'] }));
    expect(bulk.results.map((r: { ok: boolean; error?: { code: string } }) => r.error?.code ?? 'ok')).toEqual([
      'JOB_NOT_FOUND',
      'JOB_STATE_CONFLICT',
      'JOB_NOT_FOUND',
    ]);
  });

  it('an admin key sees every tenant and may act on any', async () => {
    const page = await json(as(admin, 'GET', '/api/jobs?tenantId=globex'));
    // globex's two jobs, and the job that drives its workflow run.
    expect(page.jobs.map((j: { id: string }) => j.id)).toEqual(expect.arrayContaining([globex.job, globex.dead]));
    expect(new Set(page.jobs.map((j: { tenantId: string }) => j.tenantId))).toEqual(new Set(['globex']));
    expect((await as(admin, 'GET', `/api/cron/${globex.schedule}`)).status).toBe(200);
    expect((await as(admin, 'GET', `/api/workflows/runs/${globex.run}`)).status).toBe(200);
    expect((await as(admin, 'GET', '/api/stats')).status).toBe(200);
    expect((await as(admin, 'GET', '/api/keys')).status).toBe(200);
  });

  it('the typed client creates, lists and revokes keys with an admin key', async () => {
    const client = createClient(api.url, { token: admin });
    const created = await client.api.keys.$post({ json: { tenantId: 'initech', name: 'typed' } });
    expect(created.status).toBe(201);
    const { key, token } = await okJson(created);
    expect(token.startsWith(`bk_${key.id}_`)).toBe(true);
    const listed = await okJson(client.api.keys.$get({ query: { tenantId: 'initech' } }));
    expect(listed.keys.map((k) => k.id)).toEqual([key.id]);
    const revoked = await client.api.keys[':id'].revoke.$post({ param: { id: key.id } });
    expect(revoked.status).toBe(200);
    expect((await okJson(client.api.keys.$get({ query: { tenantId: 'initech' } }))).keys).toEqual([]);
  });

  it('a revoked key is refused (here at once; elsewhere within the cache time)', async () => {
    expect((await as(globex.keyToken, 'GET', '/api/jobs')).status).toBe(200);
    expect((await as(admin, 'POST', `/api/keys/${globex.key}/revoke`)).status).toBe(200);
    expect((await as(globex.keyToken, 'GET', '/api/jobs')).status).toBe(401);
    expect(await api.metrics.render()).toMatch(/^baton_auth_failures_total\{reason="revoked"\} 1$/m);
  });

  it('without a key, or with a wrong one, every guarded route is 401', async () => {
    expect((await api.raw('/api/jobs')).status).toBe(401);
    expect((await api.raw('/api/jobs', { headers: { authorization: `Bearer ${acme.slice(0, -1)}x` } })).status).toBe(401);
    expect((await api.raw('/metrics')).status).toBe(401);
  });
});
