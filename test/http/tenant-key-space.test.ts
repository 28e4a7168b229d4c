// Concurrency keys named by a tenant API key live in that tenant's own space (stored as
// `<tenant>#<key>`), so a tenant's jobs can neither count against nor exhaust a cap or rate
// limit that another tenant's jobs use; an admin's keys stay as given (fleet-wide).

import { beforeAll, describe, expect, it } from 'vitest';
import { type Baton, createBaton, tenantConcurrencyKey } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { deferred, waitFor } from '../helpers/wait.ts';
import { JSON_HEADERS, useApi } from './harness.ts';

const db = useTestDatabase();
const api = useApi(db, { withApiKeys: true, baton: { queues: {} } });
let acme: string;
let globex: string;
let admin: string;

beforeAll(async () => {
  const keys = api.apiKeys!;
  acme = (await keys.create({ tenantId: 'acme' })).token;
  globex = (await keys.create({ tenantId: 'globex' })).token;
  admin = (await keys.create({ role: 'admin' })).token;
});

const post = async (token: string, path: string, body: unknown) => {
  const res = await api.raw(path, {
    method: 'POST',
    headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBeLessThan(300);
  return (await res.json()) as { id: string; results?: Array<{ job: { id: string } }> };
};
const keyOf = async (id: string) =>
  (await db.query<{ k: string | null }>('SELECT concurrency_key AS k FROM baton.jobs WHERE id = $1', [id])).rows[0]!.k;

describe("a tenant key's concurrency keys", () => {
  it('are stored in its tenant space (single and batch enqueue); an admin key stores them as given', async () => {
    const a = await post(acme, '/api/jobs', { jobType: 'x', queue: 'ks', concurrencyKey: 'vendor:x' });
    const g = await post(globex, '/api/jobs', { jobType: 'x', queue: 'ks', concurrencyKey: 'vendor:x' });
    const batch = await post(acme, '/api/jobs/batch', { jobs: [{ jobType: 'x', queue: 'ks', concurrencyKey: 'user:1' }] });
    const shared = await post(admin, '/api/jobs', { jobType: 'x', queue: 'ks', tenantId: 'acme', concurrencyKey: 'vendor:x' });
    const none = await post(acme, '/api/jobs', { jobType: 'x', queue: 'ks' });
    expect(await keyOf(a.id)).toBe('acme#vendor:x');
    expect(await keyOf(g.id)).toBe('globex#vendor:x');
    expect(await keyOf(batch.results![0]!.job.id)).toBe('acme#user:1');
    expect(await keyOf(shared.id)).toBe('vendor:x');
    expect(await keyOf(none.id)).toBeNull();
    expect(tenantConcurrencyKey('acme', 'vendor:x')).toBe('acme#vendor:x');
  });

  it("cannot exhaust a cap another tenant's jobs of the same key use", async () => {
    // The fleet-wide key vendor:y is capped at 1; globex's jobs use it (enqueued by an admin, as given).
    const limit = await api.raw('/api/flow/keys', {
      method: 'PUT',
      headers: { ...JSON_HEADERS, authorization: `Bearer ${admin}` },
      body: JSON.stringify({ pattern: 'vendor:y', concurrencyLimit: 1, rateLimit: null }),
    });
    expect(limit.status).toBe(200);
    const release = deferred<void>();
    const started: string[] = [];
    const worker: Baton = createBaton({
      connectionString: db.url,
      poolSize: 3,
      queues: { capped: 4 },
      pollIntervalMs: 100,
      handlers: {
        hold: async ({ job }) => {
          started.push(job.tenantId);
          await release.promise;
        },
        quick: ({ job }) => {
          started.push(job.tenantId);
        },
      },
    });
    try {
      await worker.start();
      // acme's tenant key names vendor:y for a job that holds on until released.
      const held = await post(acme, '/api/jobs', { jobType: 'hold', queue: 'capped', concurrencyKey: 'vendor:y' });
      await waitFor(async () => (await worker.admin.getJob(held.id)).state === 'running', { message: "acme's job running" });
      // globex's job of the shared key still runs: acme's running job is not counted against vendor:y.
      const other = await post(admin, '/api/jobs', { jobType: 'quick', queue: 'capped', tenantId: 'globex', concurrencyKey: 'vendor:y' });
      await waitFor(async () => (await worker.admin.getJob(other.id)).state === 'succeeded', {
        message: "globex's vendor:y job succeeded while acme's job of the same name runs",
        timeoutMs: 5_000,
      });
      expect(started).toEqual(['acme', 'globex']);
    } finally {
      release.resolve();
      await worker.stop();
    }
  });

  it('still may not set a concurrencyLimit (403 ADMIN_REQUIRED): caps an admin sets on its keys stay in force', async () => {
    const res = await api.raw('/api/jobs', {
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization: `Bearer ${acme}` },
      body: JSON.stringify({ jobType: 'x', concurrencyKey: 'vendor:x', concurrencyLimit: 100 }),
    });
    expect(res.status).toBe(403);
  });
});
