// `baton serve` starting up, as an operator sees it: the port is bound before any worker
// starts, so a port in use stops start-up with no worker registered and no job claimed, and
// the shutdown that follows names only the steps of what came up (nothing "drains"); and a
// daemon open on loopback notices the first API key created, and the last one revoked.

import { type AddressInfo, createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClosableApiKeys, openApiKeys } from '../../src/create-api-keys.ts';
import { watchAuthMode } from '../../src/daemon/auth-mode.ts';
import { EXIT_FAILED } from '../../src/daemon/shutdown.ts';
import { runBaton, waitExit } from '../e2e/daemon-process.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { waitFor } from '../helpers/wait.ts';

const db = useTestDatabase();

describe('baton serve start-up', () => {
  let holder: Server;
  let taken: number;
  beforeAll(async () => {
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    taken = (holder.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => holder?.close(resolve));
  });

  it('a port in use stops it before any worker starts: exit 1, one plain line, no worker row, the job untouched', async () => {
    // Migrated by the template; a due job a started worker would claim at once.
    const job = await insertJob(db.pool, { jobType: 'noop' });
    const d = runBaton(['serve', '--port', String(taken), '--queues', 'default:2'], { DATABASE_URL: db.url, LOG_LEVEL: 'info' });
    expect(await waitExit(d, 30_000)).toBe(EXIT_FAILED);
    const lines = d
      .stdout()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([
      `cannot listen on 127.0.0.1:${taken}: EADDRINUSE (set PORT / HOST)`,
    ]);
    const said = lines.map((l) => l.msg);
    expect(said).not.toContain('workers started');
    expect(said.find((m) => m.startsWith('shutting down'))).toBe('shutting down: close the engine, close the key store');
    expect((await db.query('SELECT count(*)::int AS n FROM baton.workers')).rows[0].n).toBe(0);
    expect((await db.query('SELECT state, attempt FROM baton.jobs WHERE id = $1', [job])).rows[0]).toEqual({
      state: 'pending',
      attempt: 0,
    });
  }, 60_000);
});

describe('watchAuthMode', () => {
  let keys: ClosableApiKeys;
  beforeAll(() => {
    keys = openApiKeys({ pool: db.pool, schema: db.schema, cacheMs: 50 });
  });
  afterAll(async () => {
    await keys?.close();
  });

  it('reports the first key created (closed) and the last one revoked (open again), once each', async () => {
    const changes: boolean[] = [];
    const watch = watchAuthMode({ apiKeys: keys, open: true, intervalMs: 50, onChange: (open) => changes.push(open) });
    try {
      const { key } = await keys.create({ role: 'admin' });
      await waitFor(() => changes.length === 1, { message: 'the key noticed' });
      expect(changes).toEqual([false]);
      const second = await keys.create({ tenantId: 'acme' });
      await keys.revoke(key.id);
      await keys.revoke(second.key.id);
      await waitFor(() => changes.length === 2, { message: 'the last revocation noticed' });
      expect(changes).toEqual([false, true]);
    } finally {
      watch.stop();
    }
  });
});
