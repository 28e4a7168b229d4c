// The leader lease's epoch across a promotion that missed a takeover (asynchronous
// replication): the next takeover on the promoted server must not hand the lost epoch out
// again, or the zombie leader's fenced writes (leaderFenceSql checks the epoch alone) would
// pass beside the real leader's until its next renewal failed.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.ts';
import { PgLeaderStore } from '../../src/db/pg/pg-leader.ts';
import { clusterUnavailable, type PgCluster } from '../helpers/pg-cluster.ts';
import { waitFor } from '../helpers/wait.ts';
import { usePrimaryAndStandby } from './clusters.ts';

const unavailable = clusterUnavailable();
if (unavailable) console.warn(`test/failover/leader-epoch.test.ts: skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('the leader epoch across a promotion that missed a takeover', () => {
  let primary: PgCluster;
  let standby: PgCluster;
  usePrimaryAndStandby((p, s) => {
    primary = p;
    standby = s;
  });

  // A presence key nobody holds: any candidate may take the lease over at once.
  const acquire = (store: PgLeaderStore, holder: string) =>
    store.leaderAcquire({ holder, leaseMs: 60_000, lockKey: 999, lockNamespace: 4242, lastEpoch: null });

  it('a zombie leader whose takeover was lost writes nothing under the new leader', async () => {
    const old = new pg.Pool({ connectionString: primary.url(), max: 1 });
    await migrate(old, { schema: 'baton' });
    const store = new PgLeaderStore(old, '"baton"');
    expect(await acquire(store, 'a')).toBe('1');
    const lsn = (await old.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0]!.l;
    const sb = new pg.Pool({ connectionString: standby.url(), max: 1 });
    await waitFor(async () => (await sb.query('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn])).rows[0].ok, {
      message: 'the standby to replay the first lease',
    });
    await sb.end();

    await standby.stopImmediate();
    const zombieEpoch = await acquire(store, 'zombie'); // committed on the old primary only
    await old.end();
    await primary.stopImmediate();
    await standby.start();
    await standby.promote();

    const fresh = new pg.Pool({ connectionString: standby.url(), max: 2 });
    try {
      const freshStore = new PgLeaderStore(fresh, '"baton"');
      const leaderEpoch = await waitFor(() => acquire(freshStore, 'new'), { timeoutMs: 20_000, message: 'a takeover on the new primary' });
      // The zombie, back on the new primary with its epoch: its fenced write must not happen.
      const r = await freshStore.leaderFenced({ epoch: zombieEpoch!, idleMs: 5_000, stillLeader: () => true }, async () => 'wrote');
      expect({ held: r.held, sameEpoch: leaderEpoch === zombieEpoch }).toEqual({ held: false, sameEpoch: false });
    } finally {
      await fresh.end();
    }
  });
});
