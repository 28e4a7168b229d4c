// Fencing across a promotion: a standby that missed the old primary's last claims (asynchronous
// replication) must still hand out tokens above every token the old primary gave a worker, or
// that zombie's outcome write would match the new lease. The standby is stopped so it misses
// a session's token floor and a claim, exactly the window an asynchronous failover loses.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrate.ts';
import { openPool } from '../../src/db/pg/open-pool.ts';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { jobQueries } from '../../src/db/pg/queries/job.ts';
import { installTokenFloor } from '../../src/db/pg/token-floor.ts';
import { insertJob } from '../helpers/factory.ts';
import { clusterUnavailable, type PgCluster } from '../helpers/pg-cluster.ts';
import { waitFor } from '../helpers/wait.ts';
import { usePrimaryAndStandby } from './clusters.ts';

const SCHEMA = '"baton"';

/** A pool and executor as createBaton builds them for its own claims (asynchronous commit behind a token floor). */
function batonLike(url: string) {
  const pool = openPool({ connectionString: url, max: 2 });
  installTokenFloor(pool, jobQueries(SCHEMA).tokenFloor);
  return { pool, executor: new PgExecutor(pool, SCHEMA) };
}

// A machine that cannot start private clusters skips this, saying so.
const unavailable = clusterUnavailable();
if (unavailable) console.warn(`test/failover/fencing.test.ts: skipped: ${unavailable}`);

describe.skipIf(unavailable !== null)('fencing tokens across a promotion', () => {
  let primary: PgCluster;
  let standby: PgCluster;
  usePrimaryAndStandby((p, s) => {
    primary = p;
    standby = s;
  });

  it('a promoted standby that missed claims hands out only newer tokens, and the zombie writes nothing', async () => {
    const admin = new pg.Pool({ connectionString: primary.url(), max: 1 });
    await migrate(admin, { schema: 'baton' });
    const id = await insertJob(admin, { schema: 'baton', queue: 'q' });
    // A claim the standby sees: the sequence and a floor have reached it.
    const warm = batonLike(primary.url());
    const [seen] = await warm.executor.jobClaim({ queue: 'q', limit: 1, owner: 'w0', leaseMs: 60_000, intoRunning: true });
    await warm.executor.jobReleaseMany({ leases: [{ id: seen!.id, token: seen!.token }], refundAttempt: true });
    await warm.pool.end();
    const lsn = (await admin.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).rows[0]!.l;
    const standbyPool = new pg.Pool({ connectionString: standby.url(), max: 1 });
    await waitFor(async () => (await standbyPool.query(`SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok`, [lsn])).rows[0].ok, {
      message: 'the standby to replay the first claim',
    });
    await standbyPool.end();
    await admin.end();

    // From here the standby misses everything: a new session's floor and its claim.
    await standby.stopImmediate();
    // Claimed and given back a hundred times: the sequence runs past the 32 values PostgreSQL
    // logs ahead of each nextval, so the standby's copy of it is behind the last token.
    const zombie = batonLike(primary.url());
    const claimZombie = () => zombie.executor.jobClaim({ queue: 'q', limit: 1, owner: 'zombie', leaseMs: 60_000, intoRunning: true });
    for (let i = 0; i < 100; i++) {
      const [l] = await claimZombie();
      await zombie.executor.jobReleaseMany({ leases: [{ id: l!.id, token: l!.token }], refundAttempt: true });
    }
    const [old] = await claimZombie();
    expect(old?.id).toBe(id);
    await primary.stopImmediate();
    await zombie.pool.end().catch(() => undefined);

    await standby.start();
    await standby.promote();
    const fresh = batonLike(standby.url());
    try {
      const [now] = await waitFor(
        () => fresh.executor.jobClaim({ queue: 'q', limit: 1, owner: 'new', leaseMs: 60_000, intoRunning: true }),
        { timeoutMs: 20_000, message: 'a claim on the promoted standby' },
      ).then((jobs) => jobs);
      expect(now?.id).toBe(id);
      expect(BigInt(now!.token)).toBeGreaterThan(BigInt(old!.token));
      // The zombie comes back to the new primary with its old token: nothing is written.
      const written = await fresh.executor.jobCompleteMany({ items: [{ id, token: old!.token, result: { zombie: true } }] });
      expect(written.size).toBe(0);
      const row = await fresh.pool.query<{ state: string; lease_token: string; lease_owner: string }>(
        `SELECT state, lease_token::text, lease_owner FROM baton.jobs WHERE id = $1`,
        [id],
      );
      expect(row.rows[0]).toEqual({ state: 'running', lease_token: now!.token, lease_owner: 'new' });
    } finally {
      await fresh.pool.end();
    }
  });
});
