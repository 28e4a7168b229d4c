// A Baton over two databases: enqueues land on the cluster of their queue, a worker starts only
// the engines of clusters it works, job ids name their cluster, and the admin API merges
// listings (in order, each job once across pages), counts and actions across both.

import { afterEach, describe, expect, it } from 'vitest';
import type { ShardedBaton } from '../../src/core/sharding/sharded-baton.ts';
import { createShardedBaton, type ShardedBatonOptions } from '../../src/create-sharded-baton.ts';
import { createApp } from '../../src/http/app.ts';
import { BatonError } from '../../src/types/errors.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { JSON_HEADERS } from '../helpers/http.ts';
import { waitFor } from '../helpers/wait.ts';

const a = useTestDatabase();
const b = useTestDatabase();
const open: ShardedBaton[] = [];

function sharded(o: Partial<ShardedBatonOptions> = {}): ShardedBaton {
  const s = createShardedBaton({
    clusters: { a: a.url, b: b.url },
    routes: { emails: 'a', reports: 'b' },
    pollIntervalMs: 200,
    ...o,
  });
  open.push(s);
  return s;
}

const countIn = async (db: typeof a, queue: string) =>
  Number((await db.query('SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1', [queue])).rows[0].n);

afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.stop({ drainMs: 1_000 })));
  await a.query('TRUNCATE baton.jobs CASCADE');
  await b.query('TRUNCATE baton.jobs CASCADE');
});

describe('sharded Baton: routing', () => {
  it('stores each job on the cluster of its queue and names it <cluster>:<id>', async () => {
    const s = sharded();
    const e = await s.enqueue({ jobType: 'send', queue: 'emails' });
    const r = await s.enqueue({ jobType: 'build', queue: 'reports' });
    expect(e.job.id).toMatch(/^a:[1-9][0-9]*$/);
    expect(r.job.id).toMatch(/^b:[1-9][0-9]*$/);
    expect([await countIn(a, 'emails'), await countIn(a, 'reports'), await countIn(b, 'emails'), await countIn(b, 'reports')]).toEqual([
      1, 0, 0, 1,
    ]);
    expect((await s.admin.getJob(r.job.id)).queue).toBe('reports');
  });

  it('refuses an unrouted queue without a default cluster, and sends it to the default one when set', async () => {
    const err = await sharded()
      .enqueue({ jobType: 'x', queue: 'misc' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BatonError);
    expect((err as BatonError).code).toBe('INVALID_ARGUMENT');
    expect((err as BatonError).message).toContain('misc');
    const withDefault = sharded({ default: 'b' });
    expect((await withDefault.enqueue({ jobType: 'x', queue: 'misc' })).job.id).toMatch(/^b:/);
    expect((await withDefault.enqueue({ jobType: 'x' })).job.queue).toBe('default');
    expect(await countIn(b, 'misc')).toBe(1);
  });

  it('refuses a batch that spans clusters and stores nothing; a batch on one cluster is one insert', async () => {
    const s = sharded();
    const err = await s
      .enqueueMany([
        { jobType: 'x', queue: 'emails' },
        { jobType: 'x', queue: 'reports' },
      ])
      .catch((e: unknown) => e);
    expect((err as BatonError).code).toBe('INVALID_ARGUMENT');
    expect((await countIn(a, 'emails')) + (await countIn(b, 'reports'))).toBe(0);
    const ok = await s.enqueueMany([
      { jobType: 'x', queue: 'reports' },
      { jobType: 'y', queue: 'reports' },
    ]);
    expect(ok.map((x) => x.job.id.split(':')[0])).toEqual(['b', 'b']);
  });

  it('takes parents named on the same cluster and refuses a parent on another', async () => {
    const s = sharded();
    const parent = await s.enqueue({ jobType: 'p', queue: 'reports' });
    const child = await s.enqueue({ jobType: 'c', queue: 'reports', dependsOn: [parent.job.id] });
    expect(child.job.state).toBe('waiting');
    expect(child.job.dependsOn).toEqual([parent.job.id]);
    const err = await s.enqueue({ jobType: 'c', queue: 'emails', dependsOn: [parent.job.id] }).catch((e: unknown) => e);
    expect((err as BatonError).code).toBe('INVALID_ARGUMENT');
  });

  it('names the bad setting in its INVALID_CONFIG', () => {
    const make = (o: Partial<ShardedBatonOptions>) => () =>
      createShardedBaton({ clusters: { a: a.url, b: b.url }, routes: { emails: 'a' }, ...o });
    expect(make({ clusters: { A: a.url } })).toThrow(/clusters: cluster name "A"/);
    expect(make({ routes: { emails: 'c' } })).toThrow(/routes: queue emails goes to cluster "c"/);
    expect(make({ default: 'z' })).toThrow(/default "z"/);
    expect(make({ queues: { other: 1 } })).toThrow(/queue other is worked here but routes routes it to no cluster/);
    expect(make({ clusters: {} })).toThrow(/clusters must name at least one cluster/);
  });
});

describe('sharded Baton: workers', () => {
  it('runs each queue on its cluster, and starts only the engines of clusters it works', async () => {
    const ran: string[] = [];
    const handlers = { job: async (ctx: { job: { queue: string } }) => void ran.push(ctx.job.queue) };
    const both = sharded({ queues: { emails: 2, reports: 2 }, handlers });
    const onlyA = sharded({ queues: { emails: 1 }, handlers });
    expect(both.workClusters).toEqual(['a', 'b']);
    expect(onlyA.workClusters).toEqual(['a']);
    const succeededIds: string[] = [];
    both.events.on('succeeded', ({ job }) => void succeededIds.push(job.id));
    await both.start();
    await onlyA.start();
    expect(onlyA.clusters.b?.stats().presenceHeld).toBeNull();
    const jobs = await Promise.all([both.enqueue({ jobType: 'job', queue: 'emails' }), both.enqueue({ jobType: 'job', queue: 'reports' })]);
    for (const { job } of jobs) {
      await waitFor(async () => (await both.admin.getJob(job.id)).state === 'succeeded', { message: `job ${job.id} to succeed` });
    }
    expect(ran.sort()).toEqual(['emails', 'reports']);
    // Events carry the cluster's id too (the ones this instance ran).
    expect(succeededIds.every((id) => jobs.some((j) => j.job.id === id))).toBe(true);
    expect(both.stats().succeeded + onlyA.stats().succeeded).toBe(2);
  });
});

describe('sharded Baton: events', () => {
  it("listens on the clusters' engines only while someone listens on the merged emitter", () => {
    const s = sharded();
    const count = () => ['a', 'b'].map((c) => s.clusters[c]?.events.listenerCount('succeeded'));
    // Engines skip building a payload nobody listens to: nothing is attached until needed.
    expect(count()).toEqual([0, 0]);
    const listener = () => undefined;
    s.events.on('succeeded', listener);
    s.events.on('succeeded', listener);
    expect(count()).toEqual([1, 1]);
    s.events.off('succeeded', listener);
    expect(count()).toEqual([1, 1]);
    s.events.off('succeeded', listener);
    expect(count()).toEqual([0, 0]);
  });
});

describe('sharded Baton: a listener that throws', () => {
  it('does not keep the listeners after it from hearing, and is reported as an error event', () => {
    const s = sharded();
    const heard: string[] = [];
    const errors: string[] = [];
    s.events.on('error', ({ where }) => void errors.push(where));
    s.events.on('released', () => {
      throw new Error('a listener fails');
    });
    s.events.on('released', ({ queue }) => void heard.push(queue));
    // A cluster's engine emits; the merged emitter forwards it to both listeners.
    s.clusters.a?.events.emit('released', { queue: 'emails', count: 1, reason: 'shutdown' });
    expect(heard).toEqual(['emails']);
    expect(errors).toEqual(['listener:released']);
  });
});

describe('sharded Baton: admin', () => {
  it('merges listings newest first across clusters; cursor and offset pages give each job once, in the same order', async () => {
    const s = sharded();
    const enqueued: Array<{ id: string; createdAt: Date }> = [];
    for (let i = 0; i < 13; i++) enqueued.push((await s.enqueue({ jobType: 't', queue: i % 3 === 0 ? 'reports' : 'emails' })).job);
    // Oldest first as the merge defines it: created_at (milliseconds, each cluster's clock), then
    // cluster name, then id. Jobs of two clusters made in the same millisecond tie on the first.
    const order = (j: { id: string; createdAt: Date }) => {
      const [cluster, n] = j.id.split(':') as [string, string];
      return { t: j.createdAt.getTime(), cluster, n: BigInt(n) };
    };
    const made = [...enqueued]
      .sort((x, y) => {
        const a = order(x);
        const b = order(y);
        if (a.t !== b.t) return a.t - b.t;
        if (a.cluster !== b.cluster) return a.cluster < b.cluster ? -1 : 1;
        return a.n < b.n ? -1 : a.n > b.n ? 1 : 0;
      })
      .map((j) => j.id);
    const first = await s.admin.listJobs({ limit: 100 });
    expect(first.total).toBe(13);
    expect(first.jobs.map((j) => j.id)).toEqual([...made].reverse());
    const byCursor: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const p = await s.admin.listJobs({ limit: 4, ...(cursor ? { cursor } : {}) });
      byCursor.push(...p.jobs.map((j) => j.id));
      if (p.nextCursor === null) break;
      cursor = p.nextCursor;
    }
    expect(byCursor).toEqual([...made].reverse());
    const byOffset: string[] = [];
    for (let offset = 0; offset < 13; offset += 5) byOffset.push(...(await s.admin.listJobs({ limit: 5, offset })).jobs.map((j) => j.id));
    expect(byOffset).toEqual([...made].reverse());
    const asc = await s.admin.listJobs({ order: 'asc', limit: 100 });
    expect(asc.jobs.map((j) => j.id)).toEqual(made);
  });

  it('acts on a job by its cluster id, refuses a bare id, and sums counts and stats', async () => {
    const s = sharded();
    const r = await s.enqueue({ jobType: 't', queue: 'reports' });
    await s.enqueue({ jobType: 't', queue: 'emails' });
    await s.enqueue({ jobType: 't', queue: 'emails' });
    const cancelled = await s.admin.cancel(r.job.id);
    expect(cancelled).toMatchObject({ id: r.job.id, state: 'cancelled' });
    expect((await s.admin.replay(r.job.id)).state).toBe('pending');
    const bare = r.job.id.split(':')[1] as string;
    await expect(s.admin.getJob(bare)).rejects.toMatchObject({ code: 'JOB_NOT_FOUND' });
    const bulk = await s.admin.bulk('cancel', [r.job.id, bare]);
    expect(bulk.map((x) => [x.id, x.ok])).toEqual([
      [r.job.id, true],
      [bare, false],
    ]);
    const queues = await s.admin.queues();
    expect(queues.map((q) => [q.queue, q.counts.pending, q.counts.cancelled])).toEqual([
      ['emails', 2, 0],
      ['reports', 0, 1],
    ]);
    const stats = await s.admin.stats();
    expect(stats.queues.reduce((n, q) => n + q.counts.pending + q.counts.cancelled, 0)).toBe(3);
    expect((await s.admin.pauseQueue('reports')).paused).toBe(true);
    expect(await s.admin.pausedQueues()).toEqual([expect.objectContaining({ queue: 'reports' })]);
    expect(Number((await b.query('SELECT count(*)::int AS n FROM baton.paused_queues')).rows[0].n)).toBe(1);
    await s.admin.resumeQueue('reports');
  });

  it('serves the HTTP API over both clusters: listing, job by id, cancel and stats', async () => {
    const s = sharded();
    const app = createApp(s, { metrics: false });
    const posted = await app.request('/api/jobs', {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ jobType: 't', queue: 'reports' }),
    });
    expect(posted.status).toBe(201);
    const { id } = (await posted.json()) as { id: string };
    expect(id).toMatch(/^b:/);
    await s.enqueue({ jobType: 't', queue: 'emails' });
    const list = (await (await app.request('/api/jobs?limit=1')).json()) as { jobs: Array<{ id: string }>; nextCursor: string };
    expect(list.jobs).toHaveLength(1);
    const next = (await (await app.request(`/api/jobs?limit=1&cursor=${list.nextCursor}`)).json()) as { jobs: Array<{ id: string }> };
    expect(new Set([list.jobs[0]?.id, next.jobs[0]?.id]).size).toBe(2);
    expect((await app.request(`/api/jobs/${id}`)).status).toBe(200);
    expect((await app.request(`/api/jobs/${id.split(':')[1]}`)).status).toBe(404);
    const cancelled = await app.request(`/api/jobs/${id}/cancel`, { method: 'POST', headers: JSON_HEADERS });
    expect(cancelled.status).toBe(200);
    const stats = (await (await app.request('/api/stats')).json()) as { queues: Array<{ queue: string }> };
    expect(stats.queues.map((q) => q.queue)).toEqual(['emails', 'reports']);
  });
});
