// The leader lease, set by hand: for tests of leader-only writes that need an epoch that holds
// (or no longer holds) the lease, without an engine electing itself.

import type pg from 'pg';

/** Takes the lease for `holder` under a new epoch, for `ms` (database time), whoever held it; returns the epoch. */
export async function takeLeaderLease(pool: pg.Pool, o: { holder?: string; ms?: number; schema?: string } = {}): Promise<string> {
  const r = await pool.query<{ epoch: string }>(
    `UPDATE ${o.schema ?? 'baton'}.leader_lease SET epoch = epoch + 1, holder = $1, holder_lock_key = NULL,
       expires_at = now() + make_interval(secs => $2::double precision / 1000.0), acquired_at = now(), renewed_at = now()
     RETURNING epoch::text`,
    [o.holder ?? 'test', o.ms ?? 3_600_000],
  );
  return r.rows[0]!.epoch;
}

/** The lease row as stored. */
export async function leaderLeaseRow(
  pool: pg.Pool,
  schema = 'baton',
): Promise<{ epoch: string; holder: string | null; holder_lock_key: number | null; live: boolean }> {
  const r = await pool.query(`SELECT epoch::text, holder, holder_lock_key, expires_at > now() AS live FROM ${schema}.leader_lease`);
  return r.rows[0];
}

/**
 * Ends the presence session of the lease's holder from outside, as a crash or a cut network
 * would (its presence lock goes with it); returns how many sessions were ended.
 */
export async function terminateLeaderPresence(pool: pg.Pool, schema = 'baton'): Promise<number> {
  const r = await pool.query(
    `SELECT pg_terminate_backend(l.pid) FROM pg_locks l, ${schema}.leader_lease ll
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.objid = ll.holder_lock_key::oid
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  return r.rowCount ?? 0;
}
