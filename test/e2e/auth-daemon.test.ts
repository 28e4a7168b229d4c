// The loopback rule on the real daemon (bin/baton.js, on this file's database): with no
// credential at all it refuses a non-loopback HOST (exit 2, naming HOST) and, on loopback,
// starts open and says so loudly; once a key exists it serves 0.0.0.0, where a request
// without a key is 401, and counts refusals in baton_auth_failures_total.

import { afterAll, describe, expect, it } from 'vitest';
import { openApiKeys } from '../../src/create-api-keys.ts';
import { EXIT_CONFIG } from '../../src/daemon/shutdown.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { type DaemonProcess, freePort, runBaton, waitExit, waitReady } from './daemon-process.ts';

const db = useTestDatabase();
const started: DaemonProcess[] = [];
afterAll(() => {
  for (const d of started) d.kill();
});

async function daemon(host: string): Promise<{ d: DaemonProcess; url: string }> {
  const port = await freePort();
  const d = runBaton(['serve'], { DATABASE_URL: db.url, HOST: host, PORT: String(port), BATON_QUEUES: 'default:1', LOG_LEVEL: 'info' });
  started.push(d);
  return { d, url: `http://127.0.0.1:${port}` };
}

async function stop(d: DaemonProcess): Promise<void> {
  d.child.kill('SIGTERM');
  await waitExit(d, 30_000);
}

describe('the loopback rule', () => {
  it('refuses to start on a non-loopback HOST with no token and no key, naming HOST', async () => {
    const { d } = await daemon('0.0.0.0');
    expect(await waitExit(d, 60_000)).toBe(EXIT_CONFIG);
    expect(d.output()).toContain('HOST (--host) is 0.0.0.0, which is not a loopback address, and no credential is configured');
  });

  it('starts open on loopback with no credential, and says so', async () => {
    const { d, url } = await daemon('127.0.0.1');
    await waitReady(d, url);
    expect(d.output()).toContain('NO AUTHENTICATION');
    expect((await fetch(`${url}/api/jobs`)).status).toBe(200);
    await stop(d);
  });

  it('with a key, serves a non-loopback HOST where every request needs a key', async () => {
    const keys = openApiKeys({ pool: db.pool, schema: db.schema });
    const { token } = await keys.create({ tenantId: 'acme' });
    const admin = await keys.create({ role: 'admin' });
    await keys.close();
    const { d, url } = await daemon('0.0.0.0');
    await waitReady(d, url);
    expect(d.output()).not.toContain('NO AUTHENTICATION');
    expect((await fetch(`${url}/api/jobs`)).status).toBe(401);
    expect((await fetch(`${url}/api/jobs`, { headers: { authorization: 'Bearer bk_0123456789abcdef_nope' } })).status).toBe(401);
    expect((await fetch(`${url}/api/jobs`, { headers: { authorization: 'Bearer not-a-key' } })).status).toBe(401);
    const res = await fetch(`${url}/api/jobs`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const metrics = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${admin.token}` } })).text();
    expect(metrics).toMatch(/^baton_auth_failures_total\{reason="missing"\} 1$/m);
    expect(metrics).toMatch(/^baton_auth_failures_total\{reason="malformed"\} 1$/m);
    expect(metrics).toMatch(/^baton_auth_failures_total\{reason="bad_token"\} 1$/m);
    expect(metrics).toMatch(/^baton_auth_failures_total\{reason="revoked"\} 0$/m);
    await stop(d);
  });
});
