// Two independent PostgreSQL servers: the file's database on the shared server and a second
// cluster started on a free port. migrate() applies the schema to the new one; each queue runs
// on its own server; and while one server is down, the other's queues go on enqueuing and
// running: nothing one cluster guarantees waits on another.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ShardedBaton } from '../../src/core/sharding/sharded-baton.ts';
import { createShardedBaton } from '../../src/create-sharded-baton.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { clusterUnavailable, type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts';
import { waitFor } from '../helpers/wait.ts';

const why = clusterUnavailable();
const a = useTestDatabase();

describe.skipIf(why !== null)(`sharded Baton on two PostgreSQL servers${why ? ` (skipped: ${why})` : ''}`, () => {
  let second: PgCluster;
  let baton: ShardedBaton;
  const ran: string[] = [];

  beforeAll(async () => {
    second = await startPgCluster();
    baton = createShardedBaton({
      clusters: { a: a.url, b: second.url() },
      routes: { emails: 'a', reports: 'b' },
      queues: { emails: 2, reports: 2 },
      pollIntervalMs: 200,
      handlers: { job: (ctx) => void ran.push(ctx.job.id) },
    });
  }, 120_000);
  afterAll(async () => {
    await baton?.stop({ drainMs: 1_000 });
    await second?.destroy();
  });

  it('migrates the new server and runs each queue on its own server', async () => {
    const { applied } = await baton.migrate();
    // The file's database is cloned from the migrated template; the second server starts empty.
    expect(applied.length).toBeGreaterThan(0);
    expect(applied.every((f) => f.startsWith('b:'))).toBe(true);
    await baton.start();
    const e = await baton.enqueue({ jobType: 'job', queue: 'emails' });
    const r = await baton.enqueue({ jobType: 'job', queue: 'reports' });
    for (const id of [e.job.id, r.job.id]) {
      await waitFor(async () => (await baton.admin.getJob(id)).state === 'succeeded', { message: `${id} to succeed` });
    }
    const onSecond = await baton.clusters.b?.admin.queues();
    expect(onSecond?.map((q) => [q.queue, q.counts.succeeded])).toEqual([['reports', 1]]);
  });

  it("goes on working the other cluster's queues while one server is down", async () => {
    await second.stopImmediate();
    const during = await baton.enqueue({ jobType: 'job', queue: 'emails' });
    await waitFor(async () => (await baton.admin.getJob(during.job.id)).state === 'succeeded', {
      message: 'the emails job to succeed while cluster b is down',
    });
    await expect(baton.enqueue({ jobType: 'job', queue: 'reports' })).rejects.toMatchObject({ code: 'DB_UNAVAILABLE' });
    // A merged read needs every cluster: it fails rather than answer half the jobs.
    await expect(baton.admin.listJobs()).rejects.toMatchObject({ code: 'DB_UNAVAILABLE' });
    await second.start();
    const after = await waitFor(() => baton.enqueue({ jobType: 'job', queue: 'reports' }).catch(() => null), {
      message: 'cluster b to take enqueues again',
      timeoutMs: 30_000,
    });
    await waitFor(async () => (await baton.admin.getJob(after.job.id)).state === 'succeeded', {
      message: 'the reports job to succeed once cluster b is back',
      timeoutMs: 30_000,
    });
    expect((await baton.admin.listJobs({ limit: 100 })).total).toBe(4);
  }, 90_000);
});
