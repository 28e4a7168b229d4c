// Named queries for the leader lease (one row, migration 0019), and the fence every
// leader-only write carries: the write happens only while its epoch holds an unexpired lease,
// and a takeover waits for it to finish (the lock modes are the argument; see the migration).

import { TIMELINE_TOKEN_OFFSET } from './job-fragments.ts';
import { statementName } from './statement-name.ts';

/**
 * The fence of a leader-only statement, as a CTE body: one row while the lease is held under
 * the epoch in parameter `param` and has not expired, none otherwise. FOR KEY SHARE: a
 * takeover (FOR UPDATE) waits until the statement or transaction that took it ends; the
 * holder's renewals (FOR NO KEY UPDATE) do not.
 */
export function leaderFenceSql(schema: string, param: string): string {
  return `SELECT epoch FROM ${schema}.leader_lease
    WHERE epoch = ${param}::bigint AND expires_at > now()
    FOR KEY SHARE`;
}

export function leaderQueries(schema: string) {
  const lease = `${schema}.leader_lease`;
  const until = `now() + make_interval(secs => $2::double precision / 1000.0)`;
  return {
    // The holder extends its own lease, only while it is still the holder under its epoch and
    // the lease has not run out (a lapsed lease is taken again under a new epoch). It also
    // records its current presence key ($4, null while its presence session is down).
    renew: {
      name: statementName(schema, `leader_renew`),
      text: `UPDATE ${lease} SET expires_at = ${until}, renewed_at = now(), holder_lock_key = $4
        WHERE epoch = $3::bigint AND holder = $1 AND expires_at > now()
        RETURNING epoch::text`,
    },
    // Takes the lease under a new epoch when it has expired, when the holder's presence lock
    // ($4 is the lock namespace) is held by nobody (its session is gone), or when it is this
    // process's own lease under the epoch it last held ($5: it stopped trusting it, e.g. after a
    // pause). The row is locked FOR UPDATE, so this waits for leader writes in progress. The
    // lock check reads pg_locks only while the lease is live and its holder has a presence key.
    // The new epoch is at least the timeline's token offset + 1 (job-fragments.ts): a promoted
    // standby that missed the old primary's last takeovers (asynchronous replication) never
    // hands one of their epochs out again, so a zombie leader's fenced writes match nothing.
    // Kept in the row, so it never goes back (a later reset to timeline 1 leaves it as is).
    acquire: {
      name: statementName(schema, `leader_acquire`),
      text: `UPDATE ${lease} l SET epoch = GREATEST(l.epoch + 1, ${TIMELINE_TOKEN_OFFSET} + 1), holder = $1, holder_lock_key = $3,
          expires_at = ${until}, acquired_at = now(), renewed_at = now()
        FROM (
          SELECT singleton FROM ${lease}
          WHERE expires_at <= now()
            OR (holder = $1 AND epoch = $5::bigint)
            OR (holder_lock_key IS NOT NULL AND NOT EXISTS (
              SELECT 1 FROM pg_locks
              WHERE locktype = 'advisory' AND granted AND objsubid = 2
                AND classid = $4::int::oid AND objid = holder_lock_key::oid
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())))
          FOR UPDATE
        ) c
        WHERE l.singleton = c.singleton
        RETURNING l.epoch::text`,
    },
    // Gives the lease up (stop): the next candidate takes it at its next try.
    release: {
      name: statementName(schema, `leader_release`),
      text: `UPDATE ${lease} SET expires_at = now(), holder_lock_key = NULL
        WHERE epoch = $2::bigint AND holder = $1 AND expires_at > now()`,
    },
    // Who holds a live lease, for operators.
    current: {
      name: statementName(schema, `leader_current`),
      text: `SELECT holder, epoch::text, acquired_at, expires_at FROM ${lease} WHERE expires_at > now()`,
    },
    // The first statement of a fenced transaction: the fence (held until the transaction ends)
    // and a server-side bound on how long the transaction may sit idle ($2, ms): a holder paused
    // inside it is cut off, which ends the transaction and frees the row for a takeover.
    fenceTx: {
      name: statementName(schema, `leader_fence_tx`),
      text: `WITH fence AS (${leaderFenceSql(schema, '$1')})
        SELECT set_config('idle_in_transaction_session_timeout', $2::text, true) AS idle, EXISTS (SELECT 1 FROM fence) AS held`,
    },
  } as const;
}

export type LeaderQueries = ReturnType<typeof leaderQueries>;
