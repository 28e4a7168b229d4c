// A tenant key reading or acting on another tenant's job, run, schedule or outbox message by id
// must do the same work as for an id nobody has (docs/security.md): no timing side channel. So
// the read is limited to the key's tenant in the statement itself. Checked on the statements
// the engine sends (through a pool that records them), not on timings: for every such request
// a statement names the key's tenant beside the id, and no row of the other tenant's comes back.

import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClosableApiKeys, openApiKeys } from '../../src/create-api-keys.ts';
import type { PgClientLike, PgPoolLike, QueryConfigLike } from '../../src/db/pg/pool.ts';
import { createApp } from '../../src/http/app.ts';
import { type Baton, createBaton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { JSON_HEADERS } from './harness.ts';

const db = useTestDatabase();
const MARK = 'globex-secret-5d21';

interface Statement {
  text: string;
  values: unknown[];
  rows: unknown[];
}
const log: Statement[] = [];

/** The test database's pool, recording every statement Baton sends and the rows it got back. */
function recordingPool(pool: pg.Pool): PgPoolLike {
  const run = async (on: { query: (c: QueryConfigLike) => Promise<pg.QueryResult> }, config: QueryConfigLike) => {
    const r = await on.query(config);
    log.push({ text: config.text, values: config.values ?? [], rows: r.rows });
    return r;
  };
  return {
    query: (config) => run(pool as never, config) as never,
    connect: async () => {
      const client = await pool.connect();
      return {
        query: (config: QueryConfigLike) => run(client as never, config),
        release: (err?: Error | boolean) => client.release(err),
        on: (event: 'error', l: (err: Error) => void) => client.on(event, l),
        removeListener: (event: 'error', l: (err: Error) => void) => client.removeListener(event, l),
      } as PgClientLike;
    },
  };
}

let baton: Baton;
let keys: ClosableApiKeys;
let app: ReturnType<typeof createApp>;
let acme: string;
const globex = { job: '', dead: '', run: '', schedule: '', message: '' };

beforeAll(async () => {
  keys = openApiKeys({ pool: db.pool, schema: db.schema });
  acme = (await keys.create({ tenantId: 'acme' })).token;
  // No queues worked: nothing runs, and every statement goes through the recording pool.
  baton = createBaton({ pool: recordingPool(db.pool), queues: {} });
  baton.workflow('flow', async () => MARK);
  app = createApp(baton, { apiKeys: keys, metrics: false });
  globex.job = await insertJob(db, { tenantId: 'globex', payload: { MARK } });
  globex.dead = await insertJob(db, { tenantId: 'globex', state: 'dead_lettered', payload: { MARK } });
  globex.run = (await baton.startWorkflow('flow', { MARK }, { tenantId: 'globex' })).run.id;
  globex.schedule = (
    await baton.cron.upsert({ tenantId: 'globex', name: MARK, cron: '0 0 * * *', timezone: 'UTC', jobType: 'x', payload: { MARK } })
  ).schedule.id;
  globex.message = (
    await baton.outbox.record({ tenantId: 'globex', destination: 'd', topic: MARK, messageKey: MARK, payload: { MARK } })
  ).message.id;
});
afterAll(async () => {
  await baton?.stop();
  await keys?.close();
});

const as = (method: string, path: string, body?: unknown) =>
  app.request(path, {
    method,
    headers: { ...(method === 'GET' ? {} : JSON_HEADERS), authorization: `Bearer ${acme}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

describe("a tenant key and another tenant's id: the statement is scoped, no row comes back", () => {
  const cases = (): Array<[string, string, string, unknown?]> => [
    ['GET', `/api/jobs/${globex.job}`, globex.job],
    ['POST', `/api/jobs/${globex.job}/cancel`, globex.job],
    ['POST', `/api/jobs/${globex.job}/run-now`, globex.job],
    ['POST', `/api/jobs/${globex.dead}/replay`, globex.dead],
    ['POST', '/api/jobs/bulk', globex.job, { action: 'cancel', ids: [globex.job] }],
    ['GET', `/api/workflows/runs/${globex.run}`, globex.run],
    ['POST', `/api/workflows/runs/${globex.run}/cancel`, globex.run],
    ['POST', `/api/workflows/runs/${globex.run}/replay`, globex.run],
    ['POST', `/api/workflows/runs/${globex.run}/events/go`, globex.run, { payload: 1 }],
    ['GET', `/api/cron/${globex.schedule}`, globex.schedule],
    ['PATCH', `/api/cron/${globex.schedule}`, globex.schedule, { paused: true }],
    ['DELETE', `/api/cron/${globex.schedule}`, globex.schedule],
    ['GET', `/api/outbox/messages/${globex.message}`, globex.message],
    ['POST', `/api/outbox/messages/${globex.message}/replay`, globex.message],
  ];

  it('every read and action by id: 404, a statement with acme beside the id, and no globex row read', async () => {
    for (const [method, path, id, body] of cases()) {
      log.length = 0;
      const res = await as(method, path, body);
      const status = path.endsWith('/bulk')
        ? ((await res.json()) as { results: Array<{ ok: boolean }> }).results[0]?.ok
          ? 200
          : 404
        : res.status;
      expect(status, `${method} ${path}`).toBe(404);
      const naming = log.filter((s) => s.values.map(String).includes(id));
      expect(naming.length, `${method} ${path}: statements naming the id`).toBeGreaterThan(0);
      for (const s of naming) expect(s.values, `${method} ${path}: ${s.text.slice(0, 80)}`).toContain('acme');
      const leaked = log.filter((s) => JSON.stringify(s.rows).includes('globex'));
      expect(
        leaked.map((s) => s.text.slice(0, 80)),
        `${method} ${path}: statements that read globex rows`,
      ).toEqual([]);
    }
  });

  it("the library reads take the tenant too: another tenant's id is not found, as an id nobody has", async () => {
    await expect(baton.admin.getJob(globex.job, { tenantId: 'acme' })).rejects.toMatchObject({ code: 'JOB_NOT_FOUND' });
    expect((await baton.admin.getJob(globex.job, { tenantId: 'globex' })).id).toBe(globex.job);
    expect(await baton.workflows.getRun(globex.run, { tenantId: 'acme' })).toBeNull();
    expect((await baton.workflows.getRun(globex.run, { tenantId: 'globex' }))?.steps).toBeDefined();
    await expect(baton.cron.get(globex.schedule, { tenantId: 'acme' })).rejects.toMatchObject({ code: 'SCHEDULE_NOT_FOUND' });
    expect((await baton.cron.get(globex.schedule, { tenantId: 'globex' })).id).toBe(globex.schedule);
    await expect(baton.outbox.get(globex.message, { tenantId: 'acme' })).rejects.toMatchObject({ code: 'OUTBOX_MESSAGE_NOT_FOUND' });
    expect((await baton.outbox.get(globex.message, { tenantId: 'globex' })).id).toBe(globex.message);
  });
});
