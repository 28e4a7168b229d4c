// Named queries for the workers table: presence (one session advisory lock per
// live worker process) and the liveness sweep that powers fast reclaim.

import { leaderFenceSql } from './leader.ts';
import { statementName } from './statement-name.ts';

export function workerQueries(schema: string) {
  const workers = `${schema}.workers`;
  return {
    nextLockKey: { text: `SELECT nextval('${schema}.worker_lock_seq')::int AS key` },
    tryLock: { text: `SELECT pg_try_advisory_lock($1::int, $2::int) AS ok` },
    unlock: { text: `SELECT pg_advisory_unlock($1::int, $2::int) AS ok` },
    upsert: {
      text: `INSERT INTO ${workers} (id, lock_key, hostname, pid, queues, job_types)
        VALUES ($1, $2, $3, $4, $5::jsonb, $6::text[])
        ON CONFLICT (id) DO UPDATE SET lock_key = EXCLUDED.lock_key, gone_since = NULL, last_seen_at = now(),
          queues = EXCLUDED.queues, job_types = EXCLUDED.job_types`,
    },
    touch: {
      name: statementName(schema, `worker_touch`),
      text: `UPDATE ${workers} SET last_seen_at = now(), in_flight = $2, gone_since = NULL WHERE id = $1`,
    },
    remove: { text: `DELETE FROM ${workers} WHERE id = $1` },
    // Marks workers whose presence lock nobody holds as gone (keeping the first time seen gone),
    // and clears the mark for those whose lock is held again.
    sweep: {
      name: statementName(schema, `worker_sweep`),
      text: `WITH held AS (
          SELECT objid::bigint AS key FROM pg_locks
          WHERE locktype = 'advisory' AND granted AND objsubid = 2
            AND classid = $1::int::oid
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        )
        UPDATE ${workers} w SET gone_since = CASE
            WHEN w.lock_key::bigint IN (SELECT key FROM held) THEN NULL
            ELSE COALESCE(w.gone_since, now()) END
        WHERE (w.gone_since IS NULL) = (w.lock_key::bigint NOT IN (SELECT key FROM held))
        RETURNING w.id, w.gone_since`,
    },
    // Forgets workers gone for over an hour that hold no live lease. A leader-only write:
    // nothing unless epoch $1 holds the leader lease.
    prune: {
      name: statementName(schema, `worker_prune`),
      text: `WITH fence AS (${leaderFenceSql(schema, '$1')})
        DELETE FROM ${workers} w WHERE w.gone_since < now() - interval '1 hour'
        AND EXISTS (SELECT 1 FROM fence)
        AND NOT EXISTS (SELECT 1 FROM ${schema}.jobs j
          WHERE j.lease_owner = w.id AND j.lease_expires_at IS NOT NULL AND j.state IN ('leased', 'running'))`,
    },
    // The leader is the holder of the live leader lease (a producer-only leader has no row).
    list: {
      name: statementName(schema, `worker_list`),
      text: `SELECT id, hostname, pid, queues, job_types, in_flight, started_at, last_seen_at, gone_since IS NULL AS alive,
          gone_since IS NULL AND id IS NOT DISTINCT FROM
            (SELECT holder FROM ${schema}.leader_lease WHERE expires_at > now()) AS leader
        FROM ${workers} ORDER BY started_at`,
    },
    // What live workers can run: the queues they work and the job types they have handlers for.
    listLive: {
      name: statementName(schema, `worker_list_live`),
      text: `SELECT queues, job_types FROM ${workers} WHERE gone_since IS NULL`,
    },
  } as const;
}

export type WorkerQueries = ReturnType<typeof workerQueries>;
