// Leadership over two clusters: each cluster elects its own leader among the processes running
// an engine on it, so two processes that each work one cluster both lead at once (one database
// would let only one), and when one cluster's leader stops, another process takes over there
// while the other cluster's leader and its lease are untouched.

import { afterEach, describe, expect, it } from 'vitest';
import type { ShardedBaton } from '../../src/core/sharding/sharded-baton.ts';
import { createShardedBaton } from '../../src/create-sharded-baton.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { leaderLeaseRow } from '../helpers/leader.ts';
import { waitFor } from '../helpers/wait.ts';

const a = useTestDatabase();
const b = useTestDatabase();
const open: ShardedBaton[] = [];

/** A process of the fleet, working `queues` (emails on cluster a, reports on b). */
async function started(queues: Record<string, number>): Promise<ShardedBaton> {
  const s = createShardedBaton({
    clusters: { a: a.url, b: b.url },
    routes: { emails: 'a', reports: 'b' },
    queues,
    pollIntervalMs: 600_000,
    leaderLeaseMs: 1_000,
  });
  open.push(s);
  await s.start();
  return s;
}

const leads = (s: ShardedBaton, cluster: 'a' | 'b') => s.clusters[cluster]?.stats().leader === true;
const workerId = (s: ShardedBaton, cluster: 'a' | 'b') => s.clusters[cluster]?.config.workerId;

afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.stop({ drainMs: 1_000 })));
});

describe('sharded Baton: one leader per cluster', () => {
  it('elects a leader on each cluster at once, and a takeover on one leaves the other as it was', { timeout: 30_000 }, async () => {
    const onA = await started({ emails: 1 });
    const onB = await started({ reports: 1 });
    // Each runs an engine on one cluster only, so each is the only candidate there: both lead.
    await waitFor(() => leads(onA, 'a') && leads(onB, 'b'), { message: 'a leader on each cluster' });
    expect((await leaderLeaseRow(a.pool)).holder).toBe(workerId(onA, 'a'));
    expect((await leaderLeaseRow(b.pool)).holder).toBe(workerId(onB, 'b'));
    expect(onA.clusters.b?.stats().leader).toBeNull();
    // The merged worker list shows one leader per cluster.
    const workers = await onA.admin.workers();
    expect(workers.filter((w) => w.leader).map((w) => w.id)).toEqual([workerId(onA, 'a'), workerId(onB, 'b')]);

    // A third process on both clusters follows on both while the two leaders hold.
    const both = await started({ emails: 1, reports: 1 });
    await waitFor(() => both.clusters.a?.stats().leader === false && both.clusters.b?.stats().leader === false, {
      message: 'the third process to follow on both clusters',
    });
    const bLease = await leaderLeaseRow(b.pool);

    // Cluster a's leader stops: the third process takes a over; b keeps its leader and epoch.
    await onA.stop({ drainMs: 1_000 });
    await waitFor(() => leads(both, 'a'), { message: 'the third process to lead cluster a', timeoutMs: 15_000 });
    expect((await leaderLeaseRow(a.pool)).holder).toBe(workerId(both, 'a'));
    expect(leads(onB, 'b')).toBe(true);
    expect(leads(both, 'b')).toBe(false);
    expect(await leaderLeaseRow(b.pool)).toMatchObject({ epoch: bLease.epoch, holder: workerId(onB, 'b'), live: true });
  });
});
