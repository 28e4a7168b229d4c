// A merged listing over two clusters sorted by a key other than id or createdAt: every job of
// both clusters once, in the key's order both ways (ties by cluster, then id), offset pages
// giving the same sequence as one page, and a cursor refused as on one database.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ShardedBaton } from '../../src/core/sharding/sharded-baton.ts';
import { createShardedBaton } from '../../src/create-sharded-baton.ts';
import type { JobSummary } from '../../src/types/job.ts';
import { useTestDatabase } from '../helpers/db.ts';

const a = useTestDatabase();
const b = useTestDatabase();
let s: ShardedBaton;
const made: Array<{ id: string; jobType: string; priority: number }> = [];

beforeAll(async () => {
  s = createShardedBaton({ clusters: { a: a.url, b: b.url }, routes: { emails: 'a', reports: 'b' } });
  // Types and priorities spread over both clusters, with ties of priority inside and across them.
  const types = ['m', 'c', 'x', 'a', 'q', 'f', 'z', 'k', 'b', 'r', 'e', 'w'];
  for (const [i, jobType] of types.entries()) {
    const priority = (i * 7) % 4;
    const { job } = await s.enqueue({ jobType, queue: i % 3 === 0 ? 'reports' : 'emails', priority });
    made.push({ id: job.id, jobType, priority });
  }
});
afterAll(async () => {
  await s?.stop();
});

const ids = (jobs: JobSummary[]) => jobs.map((j) => j.id);
const cluster = (id: string) => id.split(':')[0] as string;
const local = (id: string) => BigInt(id.split(':')[1] as string);
/** The documented merge order, ascending: the key, then the cluster name, then the cluster's id. */
const asc = <K extends 'jobType' | 'priority'>(key: K) =>
  [...made].sort((x, y) => {
    if (x[key] !== y[key]) return x[key] < y[key] ? -1 : 1;
    if (cluster(x.id) !== cluster(y.id)) return cluster(x.id) < cluster(y.id) ? -1 : 1;
    return local(x.id) < local(y.id) ? -1 : 1;
  });

describe('sharded Baton: a listing sorted by another key', () => {
  it('sorts by jobType and by priority both ways across the clusters, every job once', async () => {
    const byType = await s.admin.listJobs({ sort: 'jobType', order: 'asc', limit: 100 });
    expect(byType.total).toBe(made.length);
    expect(ids(byType.jobs)).toEqual(asc('jobType').map((j) => j.id));
    const byTypeDesc = await s.admin.listJobs({ sort: 'jobType', order: 'desc', limit: 100 });
    expect(ids(byTypeDesc.jobs)).toEqual(
      asc('jobType')
        .map((j) => j.id)
        .reverse(),
    );
    const byPriority = await s.admin.listJobs({ sort: 'priority', order: 'desc', limit: 100 });
    const priorities = byPriority.jobs.map((j) => j.priority);
    expect(priorities).toEqual([...priorities].sort((x, y) => y - x));
    expect(new Set(ids(byPriority.jobs))).toEqual(new Set(made.map((j) => j.id)));
    expect(byPriority.windowed).toBe(true);
  });

  it('gives the same sequence by offset pages as in one page, and refuses a cursor', async () => {
    const whole = ids((await s.admin.listJobs({ sort: 'priority', order: 'asc', limit: 100 })).jobs);
    const paged: string[] = [];
    for (let offset = 0; offset < made.length; offset += 5) {
      const page = await s.admin.listJobs({ sort: 'priority', order: 'asc', limit: 5, offset });
      expect(page.nextCursor).toBeNull();
      paged.push(...ids(page.jobs));
    }
    expect(paged).toEqual(whole);
    await expect(s.admin.listJobs({ sort: 'jobType', cursor: 'a:1' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
