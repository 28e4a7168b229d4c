// The /api/flow routes through the typed client on a real server and database: setting and
// lifting queue limits, key patterns and tenant weights (written to the tables the claim reads),
// bad input refused whole, and the snapshot and metrics of per-tenant and per-key state.

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { errorCode, JSON_HEADERS, okJson, useApi } from './harness.ts';

const db = useTestDatabase();
const api = useApi(db);

describe('flow limits over HTTP', () => {
  it('sets and lifts a queue cap and rate limit; the queue is controlled exactly while it has one', async () => {
    const q = api.client.api.flow.queues[':queue'];
    const set = await q.$put({ param: { queue: 'fq' }, json: { concurrencyLimit: 5, rateLimit: { limit: 100, periodMs: 1000 } } });
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({ queue: 'fq', concurrencyLimit: 5, rateLimit: { limit: 100, periodMs: 1000 } });
    expect((await db.query(`SELECT concurrency_limit, rate_limit, rate_period_ms FROM baton.flow_queues WHERE queue = 'fq'`)).rows).toEqual(
      [{ concurrency_limit: 5, rate_limit: 100, rate_period_ms: 1000 }],
    );
    const snap = await okJson(api.client.api.flow.$get());
    expect(snap.queues.find((x) => x.queue === 'fq')).toMatchObject({ concurrencyLimit: 5, running: 0, tokens: 100 });

    const lifted = await q.$put({ param: { queue: 'fq' }, json: { concurrencyLimit: null, rateLimit: null } });
    expect(lifted.status).toBe(200);
    expect((await db.query(`SELECT count(*)::int AS n FROM baton.flow_queues WHERE queue = 'fq'`)).rows[0].n).toBe(0);
  });

  it('refuses bad limits whole (400) and writes nothing', async () => {
    for (const body of [
      { concurrencyLimit: 0, rateLimit: null },
      { concurrencyLimit: 1 },
      { concurrencyLimit: 1, rateLimit: { limit: 10 } },
      { concurrencyLimit: 1, rateLimit: null, extra: true },
    ]) {
      const res = await api.raw('/api/flow/queues/bad', { method: 'PUT', headers: JSON_HEADERS, body: JSON.stringify(body) });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await errorCode(res)).toBe('INVALID_ARGUMENT');
    }
    const noLimit = await api.client.api.flow.keys.$put({ json: { pattern: 'v:*', concurrencyLimit: null, rateLimit: null } });
    expect(noLimit.status).toBe(400);
    const badPattern = await api.client.api.flow.keys.$put({ json: { pattern: 'a*b*', concurrencyLimit: 1, rateLimit: null } });
    expect(badPattern.status).toBe(400);
    expect(
      (await db.query(`SELECT (SELECT count(*) FROM baton.flow_queues) + (SELECT count(*) FROM baton.flow_keys) AS n`)).rows[0].n,
    ).toBe('0');
  });

  it('sets, shows and removes key patterns (404 for an unknown one); weights set and reset', async () => {
    const keys = api.client.api.flow.keys;
    expect((await keys.$put({ json: { pattern: 'vendor:*', concurrencyLimit: 2, rateLimit: null } })).status).toBe(200);
    await insertJob(db.pool, { queue: 'fk', jobType: 'x' });
    await db.query(`UPDATE baton.jobs SET concurrency_key = 'vendor:x' WHERE queue = 'fk'`);
    const snap = await okJson(api.client.api.flow.$get());
    expect(snap.keyPatterns).toEqual([{ pattern: 'vendor:*', concurrencyLimit: 2, rateLimit: null }]);
    expect(snap.keys).toEqual([{ key: 'vendor:x', pending: 1, due: 1, running: 0, concurrencyLimit: 2, rateLimit: null, tokens: null }]);
    expect(snap.tenants).toContainEqual({ queue: 'fk', tenantId: 'default', pending: 1, running: 0 });
    const metrics = await (await api.raw('/metrics')).text();
    expect(metrics).toMatch(/baton_tenant_jobs\{queue="fk",tenant="default",state="pending"\} 1\b/);
    expect(metrics).toMatch(/baton_flow_key_limit\{key="vendor:x"\} 2\b/);

    expect((await keys.$delete({ query: { pattern: 'vendor:*' } })).status).toBe(200);
    const again = await keys.$delete({ query: { pattern: 'vendor:*' } });
    expect(again.status).toBe(404);
    expect(await errorCode(again)).toBe('KEY_PATTERN_NOT_FOUND');

    const w = api.client.api.flow.tenants[':tenantId'];
    expect(await okJson(w.$put({ param: { tenantId: 'acme' }, json: { weight: 4 } }))).toEqual({ tenantId: 'acme', weight: 4 });
    expect((await db.query(`SELECT weight FROM baton.tenant_weights WHERE tenant_id = 'acme'`)).rows).toEqual([{ weight: 4 }]);
    expect((await w.$put({ param: { tenantId: 'acme' }, json: { weight: 1001 } })).status).toBe(400);
    expect(await okJson(w.$put({ param: { tenantId: 'acme' }, json: { weight: null } }))).toEqual({ tenantId: 'acme', weight: 1 });
    expect((await db.query(`SELECT count(*)::int AS n FROM baton.tenant_weights`)).rows[0].n).toBe(0);
  });

  it('counts due jobs held back by a reached cap', async () => {
    await db.query(`INSERT INTO baton.flow_queues (queue, concurrency_limit) VALUES ('held', 1)`);
    const running = await insertJob(db.pool, { queue: 'held', jobType: 'x' });
    await db.query(
      `UPDATE baton.jobs SET state = 'running', attempt = 1, lease_token = 1, lease_owner = 'w', lease_expires_at = now() + interval '1 hour', started_at = now() WHERE id = $1`,
      [running],
    );
    await insertJob(db.pool, { queue: 'held', jobType: 'x' });
    await insertJob(db.pool, { queue: 'held', jobType: 'x' });
    const snap = await okJson(api.client.api.flow.$get());
    expect(snap.held).toContainEqual({ queue: 'held', reason: 'cap', jobs: 2 });
    expect(await (await api.raw('/metrics')).text()).toMatch(/baton_flow_held_jobs\{scope="queue",name="held",reason="cap"\} 2\b/);
  });
});
