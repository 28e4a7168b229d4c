// Conformance of jobReap (expired leases, fast reclaim of a gone worker's leases) and of the
// worker presence sweep and prune behind it, read back from the jobs and workers rows.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { lockNamespaceFor } from '../../src/create-baton.ts';
import { insertJob, insertJobs, insertWorker, workerRow } from '../helpers/factory.ts';
import { takeLeaderLease } from '../helpers/leader.ts';
import { deferred, waitFor } from '../helpers/wait.ts';
import { claim, ex, expireLeases, fresh, reapExpired, row, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();

describe('jobReap', () => {
  it('returns an expired lease to pending, keeping the attempt and recording lease_expired', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue, maxAttempts: 3 });
    const live = await insertJob(db.pool, { queue: fresh(), state: 'running' }); // lease 30 s ahead
    const [job] = await claim(queue, 1, { owner: 'w-dead' });
    await expireLeases([id]);
    const liveBefore = await row(live);

    const reaped = await ex.jobReap({ limit: 100, graceMs: 60_000, fastReclaim: false });
    expect(reaped.filter((r) => r.id === id)).toEqual([{ id, state: 'pending', queue, expired: true }]);
    expect(reaped.some((r) => r.id === live)).toBe(false);
    expect(await row(live)).toEqual(liveBefore);

    const r = await row(id);
    expect(r).toMatchObject({
      state: 'pending',
      attempt: 1,
      lease_owner: null,
      lease_expires_at: null,
      started_at: null,
      dead_letter_reason: null,
    });
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ kind: 'lease_expired', attempt: 1, token: job!.token, worker: 'w-dead' });
    expect(r.last_error).toEqual(r.errors[0]);
  });

  it('dead-letters an expired lease whose budget is spent', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue, state: 'running', attempt: 2, maxAttempts: 2, leaseExpiresAt: { inMs: -1 } });
    expect(await reapExpired([id])).toEqual([{ id, state: 'dead_lettered', queue, expired: true }]);
    const r = await row(id);
    expect(r).toMatchObject({ state: 'dead_lettered', dead_letter_reason: 'attempts_exhausted', attempt: 2, lease_owner: null });
    expect(r.finished_at).toEqual(r.updated_at);
  });

  it('works in bounded batches', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 5, { queue, state: 'leased', leaseExpiresAt: { inMs: -1 } });
    const first = await ex.jobReap({ limit: 2, graceMs: 60_000, fastReclaim: false });
    expect(first).toHaveLength(2);
    const rest = await ex.jobReap({ limit: 100, graceMs: 60_000, fastReclaim: false });
    expect([...first, ...rest].map((r) => r.id).sort()).toEqual([...ids].sort());
  });
});

describe('fast reclaim', () => {
  const ns = lockNamespaceFor('baton');
  let nextKey = 900_000;

  async function workerWithJob(workerId: string): Promise<{ jobId: string; key: number }> {
    const key = ++nextKey;
    await insertWorker(db.pool, workerId, { lockKey: key });
    // A lease far from expiry: only fast reclaim may take it.
    const jobId = await insertJob(db.pool, { queue: fresh(), state: 'running', leaseOwner: workerId, leaseExpiresAt: { inMs: 600_000 } });
    return { jobId, key };
  }
  const goneSince = async (id: string) => (await workerRow(db.pool, id))!.gone_since as Date | null;
  const reap = async (graceMs: number, fastReclaim = true) => ex.jobReap({ limit: 10_000, graceMs, fastReclaim });

  it('a worker whose presence lock nobody holds is marked gone, its leases reclaimed only after the grace', async () => {
    const { jobId } = await workerWithJob('w-gone');
    // A lock with the same key in another namespace does not count as presence.
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    try {
      await other.query('SELECT pg_advisory_lock($1::int, $2::int)', [ns === 1 ? 2 : ns - 1, nextKey]);
      await ex.workerSweep({ lockNamespace: ns });
    } finally {
      await other.end();
    }
    const since = await goneSince('w-gone');
    expect(since).toBeInstanceOf(Date);
    const before = await row(jobId);

    // Inside the grace, or with fast reclaim off: untouched.
    expect((await reap(60_000)).some((r) => r.id === jobId)).toBe(false);
    expect((await reap(0, false)).some((r) => r.id === jobId)).toBe(false);
    expect(await row(jobId)).toEqual(before);
    // A second sweep keeps the first time it was seen gone.
    await ex.workerSweep({ lockNamespace: ns });
    expect(await goneSince('w-gone')).toEqual(since);

    // Past the grace: reclaimed although the lease has not expired.
    const reaped = (await reap(0)).filter((r) => r.id === jobId);
    expect(reaped).toEqual([{ id: jobId, state: 'pending', queue: before.queue, expired: false }]);
    const r = await row(jobId);
    expect(r).toMatchObject({ state: 'pending', attempt: 1, lease_owner: null, lease_expires_at: null });
    expect(r.last_error).toMatchObject({ kind: 'worker_gone', worker: 'w-gone', token: before.lease_token });
  });

  it('a worker whose lock is held is not reclaimed; once its session is terminated it is', async () => {
    const { jobId, key } = await workerWithJob('w-held');
    const presence = new pg.Client({ connectionString: db.url, application_name: 'test-presence' });
    const ended = deferred();
    presence.on('error', () => undefined);
    presence.on('end', () => ended.resolve());
    await presence.connect();
    try {
      const got = await presence.query('SELECT pg_try_advisory_lock($1::int, $2::int) AS ok, pg_backend_pid() AS pid', [ns, key]);
      expect(got.rows[0].ok).toBe(true);
      const pid = got.rows[0].pid as number;

      await ex.workerSweep({ lockNamespace: ns });
      expect(await goneSince('w-held')).toBeNull();
      const before = await row(jobId);
      expect((await reap(0)).some((r) => r.id === jobId)).toBe(false);
      expect(await row(jobId)).toEqual(before);

      // kill the owner's session: PostgreSQL drops its session lock with it.
      await db.query('SELECT pg_terminate_backend($1)', [pid]);
      await ended.promise;
      await waitFor(
        async () => {
          await ex.workerSweep({ lockNamespace: ns });
          return (await goneSince('w-held')) !== null;
        },
        { message: 'the terminated worker to be swept as gone' },
      );
      const reaped = (await reap(0)).filter((r) => r.id === jobId);
      expect(reaped).toEqual([{ id: jobId, state: 'pending', queue: before.queue, expired: false }]);
      expect((await row(jobId)).last_error).toMatchObject({ kind: 'worker_gone' });
    } finally {
      await presence.end().catch(() => undefined);
    }
  });

  it('spares a lease claimed or renewed after its owner was seen gone; expiry still takes it', async () => {
    const { jobId: renewed } = await workerWithJob('w-late');
    await ex.workerSweep({ lockNamespace: ns });
    expect(await goneSince('w-late')).not.toBeNull();
    // Seen gone a minute ago; two leases last written before that.
    await db.query(`UPDATE baton.workers SET gone_since = now() - interval '1 minute' WHERE id = 'w-late'`);
    const twoMinutesAgo = { inMs: -120_000 };
    await db.query(`UPDATE baton.jobs SET updated_at = now() - interval '2 minutes' WHERE id = $1`, [renewed]);
    const early = await insertJob(db.pool, {
      queue: fresh(),
      state: 'running',
      leaseOwner: 'w-late',
      leaseExpiresAt: { inMs: 600_000 },
      updatedAt: twoMinutesAgo,
    });
    // Since then the owner renewed one of them and claimed a new job: it was alive after all.
    const token = (await row(renewed)).lease_token as string;
    expect((await ex.jobHeartbeatMany({ leases: [{ id: renewed, token }], leaseMs: 600_000 })).alive).toEqual(new Set([renewed]));
    const queue = fresh();
    await insertJob(db.pool, { queue });
    const [claimed] = await ex.jobClaim({ queue, limit: 1, owner: 'w-late', leaseMs: 600_000, intoRunning: true });

    const reaped = await reap(0);
    expect(reaped.map((r) => [r.id, r.expired])).toEqual([[early, false]]);
    expect((await row(claimed!.id)).state).toBe('running');
    expect((await row(renewed)).state).toBe('running');

    // Left to their leases: once expired, the reaper takes them as it takes any other.
    await db.query(`UPDATE baton.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ANY($1::bigint[])`, [
      [claimed!.id, renewed],
    ]);
    const expired = await reap(0);
    expect(expired.map((r) => [r.id, r.expired]).sort()).toEqual(
      [
        [claimed!.id, true],
        [renewed, true],
      ].sort(),
    );
  });

  it("one bound covers expired leases and a gone worker's leases together, the expired first", async () => {
    await reap(0); // nothing left over from earlier tests to share the bound with
    const { jobId } = await workerWithJob('w-bound');
    const owned = [
      jobId,
      ...(await insertJobs(db.pool, 2, { queue: fresh(), state: 'running', leaseOwner: 'w-bound', leaseExpiresAt: { inMs: 600_000 } })),
    ];
    const expired = await insertJobs(db.pool, 3, { queue: fresh(), state: 'running', leaseExpiresAt: { inMs: -1 } });
    await ex.workerSweep({ lockNamespace: ns });
    expect(await goneSince('w-bound')).not.toBeNull();

    const first = await ex.jobReap({ limit: 4, graceMs: 0, fastReclaim: true });
    expect(first).toHaveLength(4);
    expect(
      first
        .filter((r) => r.expired)
        .map((r) => r.id)
        .sort(),
    ).toEqual([...expired].sort());
    const rest = await ex.jobReap({ limit: 4, graceMs: 0, fastReclaim: true });
    expect(
      [...first, ...rest]
        .filter((r) => !r.expired)
        .map((r) => r.id)
        .sort(),
    ).toEqual([...owned].sort());
  });

  it('a worker seen gone that holds its lock again is cleared by the next sweep', async () => {
    const { key } = await workerWithJob('w-back');
    await ex.workerSweep({ lockNamespace: ns });
    expect(await goneSince('w-back')).not.toBeNull();
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await c.query('SELECT pg_advisory_lock($1::int, $2::int)', [ns, key]);
      await ex.workerSweep({ lockNamespace: ns });
      expect(await goneSince('w-back')).toBeNull();
    } finally {
      await c.end();
    }
  });
});

describe('workerPrune', () => {
  // Last in the file: the lease of a gone worker below must not meet a fast-reclaim reap.
  it('forgets workers gone for over an hour that hold no live lease, and only those', async () => {
    const p = fresh('w-prune');
    const HOUR = 3_600_000;
    const longGone = { inMs: -HOUR - 60_000 };
    await insertWorker(db.pool, `${p}-old`, { goneSince: longGone });
    await insertWorker(db.pool, `${p}-leasing`, { goneSince: longGone });
    const leased = await insertJob(db.pool, {
      queue: fresh(),
      state: 'running',
      leaseOwner: `${p}-leasing`,
      leaseExpiresAt: { inMs: 600_000 },
    });
    await insertWorker(db.pool, `${p}-recent`, { goneSince: { inMs: -HOUR + 60_000 } });
    // Alive (never seen gone), however long ago it last touched its row.
    await insertWorker(db.pool, `${p}-alive`, { lastSeenAt: { inMs: -2 * HOUR }, goneSince: null });
    const left = async () =>
      (await db.query<{ id: string }>(`SELECT id FROM baton.workers WHERE id LIKE $1 || '-%'`, [p])).rows.map((r) => r.id).sort();
    const recentBefore = await workerRow(db.pool, `${p}-recent`);

    // Under an epoch that no longer holds the leader lease: nothing.
    const deposed = await takeLeaderLease(db.pool, { holder: 'a' });
    const epoch = await takeLeaderLease(db.pool, { holder: 'b' });
    await ex.workerPrune({ epoch: deposed });
    expect(await left()).toEqual([`${p}-alive`, `${p}-leasing`, `${p}-old`, `${p}-recent`]);

    await ex.workerPrune({ epoch });
    expect(await left()).toEqual([`${p}-alive`, `${p}-leasing`, `${p}-recent`]);
    expect(await workerRow(db.pool, `${p}-recent`)).toEqual(recentBefore);

    // Once its last lease has an outcome, the long-gone worker goes too.
    const token = (await row(leased)).lease_token as string;
    expect(await ex.jobCompleteMany({ items: [{ id: leased, token, result: null }] })).toEqual(new Set([leased]));
    await ex.workerPrune({ epoch });
    expect(await left()).toEqual([`${p}-alive`, `${p}-recent`]);
  });
});
