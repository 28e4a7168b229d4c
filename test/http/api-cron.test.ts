// The /api/cron routes through the typed client against a real server: create or update by
// tenant and name, list, read, pause / resume / edit, remove, preview; bad input answers 400
// with a stable code and writes nothing, unknown ids 404; the cron metrics are exported.

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { type ApiHarness, errorCode, okJson, startApi } from './harness.ts';

const db = useTestDatabase();
let api: ApiHarness;

beforeAll(async () => {
  api = await startApi(db, { baton: { queues: { q: 1 } } });
});
afterAll(async () => {
  await api?.close();
});
beforeEach(async () => {
  await db.query('TRUNCATE baton.schedules');
});

const spec = { name: 'nightly', cron: '30 2 * * *', timezone: 'Europe/London', jobType: 'report', queue: 'q', payload: { to: 'ops' } };
const rows = async () => (await db.query('SELECT name, cron, enabled FROM baton.schedules ORDER BY name')).rows;

describe('/api/cron', () => {
  it('creates, updates by tenant and name, lists, reads, pauses, resumes, edits and removes', async () => {
    const c = api.client.api.cron;
    const created = await c.$post({ json: spec });
    // The shape baton.cron.upsert returns.
    const { schedule: s, created: isNew } = await okJson(created, 201);
    expect(isNew).toBe(true);
    expect(s).toMatchObject({ name: 'nightly', tenantId: 'default', status: 'enabled', misfirePolicy: 'fire_once', catchUpLimit: 100 });
    expect(s.nextFireAt).toMatch(/T0[12]:30:00\.000Z$/);

    const updated = await c.$post({ json: { ...spec, misfirePolicy: 'fire_all', catchUpLimit: 3 } });
    expect(await okJson(updated, 200)).toMatchObject({
      created: false,
      schedule: { id: s.id, misfirePolicy: 'fire_all', catchUpLimit: 3, nextFireAt: s.nextFireAt },
    });

    const list = await okJson(c.$get({ query: {} }));
    expect(list.schedules.map((x) => x.id)).toEqual([s.id]);
    expect((await okJson(c[':id'].$get({ param: { id: s.id } }))).id).toBe(s.id);

    const paused = await c[':id'].$patch({ param: { id: s.id }, json: { paused: true } });
    expect(await paused.json()).toMatchObject({ status: 'paused', nextFireAt: null });
    expect(await rows()).toEqual([{ name: 'nightly', cron: '30 2 * * *', enabled: false }]);
    const resumed = await c[':id'].$patch({ param: { id: s.id }, json: { paused: false, cron: '0 3 * * *' } });
    expect(await resumed.json()).toMatchObject({ status: 'enabled', cron: '0 3 * * *' });

    const removed = await c[':id'].$delete({ param: { id: s.id } });
    expect(await removed.json()).toEqual({ id: s.id, removed: true });
    expect(await rows()).toEqual([]);
    expect(await errorCode(await c[':id'].$get({ param: { id: s.id } }))).toBe('SCHEDULE_NOT_FOUND');
    expect(await errorCode(await c[':id'].$delete({ param: { id: s.id } }))).toBe('SCHEDULE_NOT_FOUND');
    expect(await errorCode(await c[':id'].$patch({ param: { id: 'abc' }, json: { paused: true } }))).toBe('SCHEDULE_NOT_FOUND');
  });

  it('previews the next fire instants in UTC and local time, across a DST change', async () => {
    const res = await api.client.api.cron.preview.$get({ query: { cron: '30 1 * * *', timezone: 'America/New_York', count: '2' } });
    const body = await okJson(res, 200);
    expect(body.fires).toHaveLength(2);
    for (const f of body.fires) expect(f.local).toMatch(/T01:30:00-0[45]:00$/);
    // From a given instant: around the November 2031 change in New York (EDT, then EST).
    const from = await okJson(
      api.client.api.cron.preview.$get({
        query: { cron: '30 1 * * *', timezone: 'America/New_York', count: '2', from: '2031-11-01T12:00:00Z' },
      }),
    );
    expect(from.fires).toEqual([
      { utc: '2031-11-02T05:30:00.000Z', local: '2031-11-02T01:30:00-04:00' },
      { utc: '2031-11-03T06:30:00.000Z', local: '2031-11-03T01:30:00-05:00' },
    ]);
    expect((await api.raw('/api/cron/preview?cron=*%20*%20*%20*%20*&timezone=UTC&from=soon')).status).toBe(400);
  });

  it('refuses bad input with 400 and a stable code, and writes nothing', async () => {
    const c = api.client.api.cron;
    const cases: Array<[unknown, string]> = [
      [{ ...spec, timezone: '+02:00' }, 'INVALID_TIMEZONE'],
      [{ ...spec, timezone: 'Atlantis/Capital' }, 'INVALID_TIMEZONE'],
      [{ ...spec, cron: '* * *' }, 'INVALID_CRON_EXPRESSION'],
      [{ ...spec, cron: '0 0 31 2 *' }, 'INVALID_CRON_EXPRESSION'],
      [{ ...spec, misfirePolicy: 'whenever' }, 'INVALID_ARGUMENT'],
      [{ ...spec, catchUpLimit: 0 }, 'INVALID_ARGUMENT'],
      [{ ...spec, surprise: 1 }, 'INVALID_ARGUMENT'],
      [{ ...spec, name: undefined }, 'INVALID_ARGUMENT'],
    ];
    for (const [body, code] of cases) {
      const res = await c.$post({ json: body as typeof spec });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(await errorCode(res), JSON.stringify(body)).toBe(code);
    }
    expect(await rows()).toEqual([]);
    const preview = await c.preview.$get({ query: { cron: '0 0 * * *', timezone: 'UTC', count: '101' } });
    expect(await errorCode(preview)).toBe('INVALID_ARGUMENT');
    const offset = await c.preview.$get({ query: { cron: '0 0 * * *', timezone: 'UTC+1' } });
    expect(await errorCode(offset)).toBe('INVALID_TIMEZONE');
  });

  it('exports the cron metrics', async () => {
    const text = await (await api.raw('/metrics')).text();
    expect(text).toContain('baton_cron_occurrences_fired_total 0');
    expect(text).toContain('baton_cron_misfires_total{policy="fire_once"} 0');
    expect(text).toContain('baton_cron_schedules_disabled_total 0');
  });
});
