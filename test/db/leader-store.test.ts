// The leader lease's statements (PgLeaderStore) read back from the row: acquire takes an
// expired lease, a dead holder's (presence lock not held) or its own lapsed one under a new
// epoch and nothing else; renew extends only the live lease of the holder under its epoch;
// release frees it; a fenced transaction writes only under the epoch that holds the lease, rolls
// back when the holder stopped trusting it, makes a takeover wait until it commits, and is cut
// off by the server when it sits idle (a holder paused inside it).

import pg from 'pg';
import { beforeEach, describe, expect, it } from 'vitest';
import { PgLeaderStore } from '../../src/db/pg/pg-leader.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { leaderLeaseRow, takeLeaderLease } from '../helpers/leader.ts';
import { deferred, waitFor } from '../helpers/wait.ts';

const db = useTestDatabase();
const NS = 4242;
const store = () => new PgLeaderStore(db.pool, quoteSchema('baton'));
const acquire = (holder: string, o: { lockKey?: number | null; lastEpoch?: string | null; leaseMs?: number } = {}) =>
  store().leaderAcquire({
    holder,
    leaseMs: o.leaseMs ?? 60_000,
    lockKey: o.lockKey ?? null,
    lockNamespace: NS,
    lastEpoch: o.lastEpoch ?? null,
  });
const expire = () => db.query('UPDATE baton.leader_lease SET expires_at = now()');
const marks = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM baton.paused_queues')).rows[0]!.n;
const mark = (c: { query: (q: { text: string; values?: unknown[] }) => Promise<unknown> }, q: string) =>
  c.query({ text: 'INSERT INTO baton.paused_queues (queue) VALUES ($1)', values: [q] });

beforeEach(async () => {
  await expire();
  await db.query('TRUNCATE baton.paused_queues');
});

describe('acquire, renew, release, current', () => {
  it('takes an expired lease under the next epoch; nobody else takes a live one', async () => {
    const { epoch: before } = await leaderLeaseRow(db.pool);
    const a = await acquire('a');
    expect(a).toBe(String(BigInt(before) + 1n));
    expect(await acquire('b')).toBeNull();
    expect(await store().leaderCurrent()).toMatchObject({ holder: 'a', epoch: a });
    // Expired by the database clock: b takes it, and a can no longer renew.
    await expire();
    expect(await store().leaderCurrent()).toBeNull();
    const b = await acquire('b');
    expect(BigInt(b!)).toBe(BigInt(a!) + 1n);
    expect(await store().leaderRenew({ holder: 'a', epoch: a!, leaseMs: 60_000, lockKey: null })).toBe(false);
    expect(await store().leaderRenew({ holder: 'b', epoch: b!, leaseMs: 60_000, lockKey: null })).toBe(true);
  });

  it('renew extends only a live lease, only for its holder under its epoch, by the database clock', async () => {
    const a = (await acquire('a', { leaseMs: 1_000 }))!;
    await store().leaderRenew({ holder: 'a', epoch: a, leaseMs: 600_000, lockKey: 7 });
    const r = await db.query(`SELECT expires_at - now() > interval '5 minutes' AS long, holder_lock_key FROM baton.leader_lease`);
    expect(r.rows[0]).toEqual({ long: true, holder_lock_key: 7 });
    expect(await store().leaderRenew({ holder: 'other', epoch: a, leaseMs: 60_000, lockKey: null })).toBe(false);
    expect(await store().leaderRenew({ holder: 'a', epoch: String(BigInt(a) - 1n), leaseMs: 60_000, lockKey: null })).toBe(false);
    // Run out: renewing is refused, taking it again gives a new epoch.
    await expire();
    expect(await store().leaderRenew({ holder: 'a', epoch: a, leaseMs: 60_000, lockKey: null })).toBe(false);
    expect(await acquire('a')).toBe(String(BigInt(a) + 1n));
  });

  it('a holder takes its own live lease again under a new epoch when it names the epoch it held', async () => {
    const a = (await acquire('a'))!;
    expect(await acquire('a')).toBeNull();
    expect(await acquire('a', { lastEpoch: String(BigInt(a) - 1n) })).toBeNull();
    expect(await acquire('imposter', { lastEpoch: a })).toBeNull();
    expect(await acquire('a', { lastEpoch: a })).toBe(String(BigInt(a) + 1n));
  });

  it('a live lease whose holder’s presence lock nobody holds is taken at once', async () => {
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock($1::int, $2::int)', [NS, 99]);
      const a = (await acquire('a', { lockKey: 99 }))!;
      expect(await acquire('b', { lockKey: 100 })).toBeNull();
      await holder.end();
      const b = await waitFor(() => acquire('b', { lockKey: 100 }), { message: 'the lease to be free once its holder’s session ended' });
      expect(BigInt(b)).toBe(BigInt(a) + 1n);
    } finally {
      await holder.end().catch(() => undefined);
    }
  });

  it('release frees the lease at once, and only the holder’s own under its epoch', async () => {
    const a = (await acquire('a'))!;
    await store().leaderRelease({ holder: 'b', epoch: a });
    await store().leaderRelease({ holder: 'a', epoch: String(BigInt(a) - 1n) });
    expect(await acquire('b')).toBeNull();
    await store().leaderRelease({ holder: 'a', epoch: a });
    expect(await acquire('b')).toBe(String(BigInt(a) + 1n));
  });
});

describe('fenced', () => {
  it('commits what it wrote under the epoch holding the lease; under any other, runs nothing', async () => {
    const deposed = await takeLeaderLease(db.pool, { holder: 'a' });
    const current = await takeLeaderLease(db.pool, { holder: 'b' });
    let ran = 0;
    const out = await store().leaderFenced({ epoch: deposed, idleMs: 10_000, stillLeader: () => true }, async (c) => {
      ran++;
      await mark(c, 'x');
    });
    expect(out).toEqual({ held: false });
    expect(ran).toBe(0);
    const ok = await store().leaderFenced({ epoch: current, idleMs: 10_000, stillLeader: () => true }, async (c) => {
      await mark(c, 'y');
      return 'done';
    });
    expect(ok).toEqual({ held: true, value: 'done' });
    expect(await marks()).toBe(1);
    // Expired by the database clock: nothing either.
    await expire();
    expect(await store().leaderFenced({ epoch: current, idleMs: 10_000, stillLeader: () => true }, async (c) => mark(c, 'z'))).toEqual({
      held: false,
    });
    expect(await marks()).toBe(1);
  });

  it('rolls back when the holder no longer trusts its lease at COMMIT, or when the work throws', async () => {
    const epoch = await takeLeaderLease(db.pool);
    expect(await store().leaderFenced({ epoch, idleMs: 10_000, stillLeader: () => false }, async (c) => mark(c, 'x'))).toEqual({
      held: false,
    });
    await expect(
      store().leaderFenced({ epoch, idleMs: 10_000, stillLeader: () => true }, async (c) => {
        await mark(c, 'y');
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await marks()).toBe(0);
  });

  it('a takeover waits until a fenced transaction in progress has committed, which then cannot be undone by it', async () => {
    const epoch = await takeLeaderLease(db.pool, { holder: 'a' });
    const wrote = deferred();
    const gate = deferred();
    const tx = store().leaderFenced({ epoch, idleMs: 10_000, stillLeader: () => true }, async (c) => {
      await mark(c, 'x');
      wrote.resolve();
      await gate.promise;
    });
    await wrote.promise;
    // The lease runs out meanwhile (a renewal does not wait for the fence: it is not a key update).
    await expire();
    const takeover = acquire('b');
    await waitFor(
      async () =>
        (
          await db.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%leader_lease l SET epoch%'`,
          )
        ).rows[0].n === 1,
      { message: 'the takeover to wait for the fenced transaction' },
    );
    gate.resolve();
    expect(await tx).toEqual({ held: true, value: undefined });
    expect(await takeover).toBe(String(BigInt(epoch) + 1n));
    expect(await marks()).toBe(1);
  });

  it('a transaction left idle longer than idleMs is ended by the server, and the lease can be taken', async () => {
    const epoch = await takeLeaderLease(db.pool, { holder: 'a' });
    const wrote = deferred();
    const gate = deferred();
    const tx = store().leaderFenced({ epoch, idleMs: 200, stillLeader: () => true }, async (c) => {
      await mark(c, 'x');
      wrote.resolve();
      await gate.promise;
      await mark(c, 'y');
    });
    await wrote.promise;
    await expire();
    const b = await waitFor(() => acquire('b'), { message: 'the takeover once the idle transaction was ended' });
    expect(BigInt(b)).toBe(BigInt(epoch) + 1n);
    gate.resolve();
    await expect(tx).rejects.toThrow();
    expect(await marks()).toBe(0);
  });
});
