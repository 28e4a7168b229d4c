// `baton serve` over two databases (BATON_CLUSTERS): it migrates the empty one at start,
// enqueues over HTTP land on the cluster of their queue and run there, the API answers
// `<cluster>:<id>` and merges stats; a bad setting stops start-up with exit 2 naming it.

import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CONFIG } from '../../src/daemon/shutdown.ts';
import { type DaemonProcess, freePort, runBaton, waitExit, waitReady } from '../e2e/daemon-process.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { JSON_HEADERS } from '../helpers/http.ts';
import { waitFor } from '../helpers/wait.ts';

const a = useTestDatabase();
const b = useTestDatabase({ from: 'empty' });

describe('baton serve with BATON_CLUSTERS', () => {
  let d: DaemonProcess | undefined;
  afterAll(async () => {
    if (d) {
      d.child.kill('SIGTERM');
      await waitExit(d, 30_000);
    }
  });

  it('migrates each cluster, runs each queue on its own and serves the merged API', async () => {
    const port = await freePort();
    d = runBaton(['serve', '--port', String(port)], {
      BATON_CLUSTERS: `a=${a.url},b=${b.url}`,
      BATON_QUEUE_ROUTES: 'emails=a,reports=b',
      BATON_QUEUES: 'emails:2,reports:2',
      LOG_LEVEL: 'info',
    });
    const base = `http://127.0.0.1:${port}`;
    await waitReady(d, base);
    const ids: string[] = [];
    for (const queue of ['emails', 'reports']) {
      const res = await fetch(`${base}/api/jobs`, {
        method: 'POST',
        headers: JSON_HEADERS,
        body: JSON.stringify({ jobType: 'noop', queue }),
      });
      expect(res.status).toBe(201);
      ids.push(((await res.json()) as { id: string }).id);
    }
    expect(ids.map((id) => id.split(':')[0])).toEqual(['a', 'b']);
    for (const id of ids) {
      await waitFor(async () => ((await (await fetch(`${base}/api/jobs/${id}`)).json()) as { state: string }).state === 'succeeded', {
        message: `${id} to succeed`,
        timeoutMs: 30_000,
      });
    }
    // Each job is stored on its own cluster, and the empty database got the schema.
    expect((await b.query('SELECT queue FROM baton.jobs')).rows).toEqual([{ queue: 'reports' }]);
    expect((await a.query('SELECT queue FROM baton.jobs')).rows).toEqual([{ queue: 'emails' }]);
    const stats = (await (await fetch(`${base}/api/stats`)).json()) as { queues: Array<{ queue: string; counts: { succeeded: number } }> };
    expect(stats.queues.map((q) => [q.queue, q.counts.succeeded])).toEqual([
      ['emails', 1],
      ['reports', 1],
    ]);
  }, 120_000);

  it('stops with exit 2 naming the setting when a route names no listed cluster', async () => {
    const bad = runBaton(['serve', '--port', '0'], {
      BATON_CLUSTERS: `a=${a.url}`,
      BATON_QUEUE_ROUTES: 'emails=z',
      BATON_QUEUES: 'emails:1',
    });
    expect(await waitExit(bad, 30_000)).toBe(EXIT_CONFIG);
    expect(bad.output()).toContain('BATON_QUEUE_ROUTES');
    expect(bad.output()).toContain('goes to cluster "z"');
  }, 60_000);
});
