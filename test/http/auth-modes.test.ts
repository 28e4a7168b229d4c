// Which credential the app asks for, by configuration: the admin token and keys side by
// side; open while nothing could authenticate, closed once a key exists (within the key
// cache time); never open with requireAuth; a wrong credential refused even while open.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClosableApiKeys, openApiKeys } from '../../src/create-api-keys.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { type ApiHarness, errorCode, type HarnessOptions, startApi } from './harness.ts';

const db = useTestDatabase();
const TOKEN = 'auth-modes-admin-token';
let keys: ClosableApiKeys;
const servers: ApiHarness[] = [];
beforeAll(() => {
  // A short cache, so "closed once a key exists" is seen quickly.
  keys = openApiKeys({ pool: db.pool, schema: db.schema, cacheMs: 100 });
});
afterAll(async () => {
  for (const s of servers) await s.close();
  await keys?.close();
});

async function server(app: NonNullable<HarnessOptions['app']>) {
  const s = await startApi(db, { app, baton: { queues: {} } });
  servers.push(s);
  return s;
}
const get = (s: ApiHarness, path: string, credential?: string) =>
  s.raw(path, credential === undefined ? {} : { headers: { authorization: `Bearer ${credential}` } });

describe('authentication modes', () => {
  it('the admin token and keys work side by side; a tenant key is no admin', async () => {
    const s = await server({ apiToken: TOKEN, apiKeys: keys });
    const tenant = (await keys.create({ tenantId: 'acme' })).token;
    expect((await get(s, '/api/stats', TOKEN)).status).toBe(200);
    expect((await get(s, '/api/jobs', tenant)).status).toBe(200);
    const refused = await get(s, '/api/stats', tenant);
    expect(refused.status).toBe(403);
    expect(await errorCode(refused)).toBe('ADMIN_REQUIRED');
    expect((await get(s, '/api/jobs')).status).toBe(401);
  });

  it('open while no key is active, closed once one is (within the cache time)', async () => {
    // Earlier tests' keys are revoked first: this server starts with none active.
    for (const k of await keys.list()) await keys.revoke(k.id);
    const s = await server({ apiKeys: keys });
    await waitFor(async () => (await get(s, '/api/jobs')).status === 200, { message: 'open without keys' });
    const wrong = await get(s, '/api/jobs', 'not-the-token');
    expect(wrong.status).toBe(401);
    const { token } = await keys.create({ role: 'admin' });
    await waitFor(async () => (await get(s, '/api/jobs')).status === 401, { message: 'closed once a key exists' });
    expect((await get(s, '/api/jobs', token)).status).toBe(200);
  });

  it('requireAuth: never open, even with no key at all', async () => {
    for (const k of await keys.list()) await keys.revoke(k.id);
    const s = await server({ apiKeys: keys, requireAuth: true });
    expect((await get(s, '/api/jobs')).status).toBe(401);
    expect((await get(s, '/metrics')).status).toBe(401);
    expect((await get(s, '/healthz')).status).toBe(200);
  });
});
