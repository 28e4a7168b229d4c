// Named queries of debounce and throttle by key (migration 0035): the lock-and-read of a key's
// row, the fold of an enqueue into the key's pending job, the windowed insert, the row's write;
// and retention's sweep of the rows no enqueue needs any more (run by the leader).
// Only enqueues that carry `debounce` or `throttle` run the others; plain jobs never do.

import { leaderFenceSql } from './leader.ts';
import { statementName } from './statement-name.ts';

export function jobWindowQueries(schema: string) {
  const jobs = `${schema}.jobs`;
  const windows = `${schema}.job_windows`;
  return {
    // Takes the key's row lock and reads the row, inserting a blank one for a new key. ON CONFLICT
    // DO UPDATE waits for a concurrent enqueue of the key to commit and then locks the row version
    // it committed, so every enqueue of one key, from any connection, runs after the last one.
    // The no-op SET is what locks an existing row (DO NOTHING would not). `now` is the database
    // clock every window is measured on, read once the lock is held (clock_timestamp(): now()
    // would be the start of the transaction, which may have waited here, or be the caller's).
    lock: {
      name: statementName(schema, `job_window_lock`),
      text: `INSERT INTO ${windows} AS w (tenant_id, queue, key, kind) VALUES ($1, $2, $3, $4)
        ON CONFLICT (tenant_id, queue, key) DO UPDATE SET kind = w.kind
        RETURNING w.kind, w.job_id::text, w.opened_at, w.until_at, w.started, clock_timestamp() AS now`,
    },
    // Folds a trailing debounce into the key's job while it is pending and was never claimed
    // (lease_token IS NULL: a released or retried job has one): the last payload wins, run_at
    // moves to the window's new end. A claim that locked the row first leaves nothing to update
    // (the WHERE is rechecked on the row it committed), and the enqueue creates a new job.
    fold: {
      name: statementName(schema, `job_window_fold`),
      text: `UPDATE ${jobs} SET payload = COALESCE($2::jsonb, 'null'::jsonb), trace_context = $3::jsonb, run_at = $4, updated_at = now()
        WHERE id = $1 AND state = 'pending' AND lease_token IS NULL
        RETURNING *`,
    },
    // One windowed job; run_at is absolute here (the caller computed it from the row's now()).
    insert: {
      name: statementName(schema, `job_window_insert`),
      text: `INSERT INTO ${jobs} (tenant_id, queue, job_type, payload, priority, run_at, max_attempts, trace_context,
          concurrency_key, concurrency_limit)
        VALUES ($1, $2, $3, COALESCE($4::jsonb, 'null'::jsonb), $5, $6, $7, $8::jsonb, $9, $10)
        RETURNING *`,
    },
    // The key's row after the enqueue, still under its lock.
    write: {
      name: statementName(schema, `job_window_write`),
      text: `UPDATE ${windows} SET kind = $4, job_id = $5, opened_at = $6, until_at = $7, started = $8, rule = $9::jsonb
        WHERE tenant_id = $1 AND queue = $2 AND key = $3`,
    },
    // Retention's sweep, first statement: locks the next rows whose window has closed, in
    // job_windows_until_idx order after the cursor ($1..$4). SKIP LOCKED: a key an enqueue holds
    // is being written, and is reached when the walk comes round again. until_at goes out as text:
    // a JS Date would drop its microseconds, and the cursor would not pass the row.
    sweepLock: {
      name: statementName(schema, `job_window_sweep_lock`),
      text: `SELECT tenant_id, queue, key, until_at::text FROM ${windows}
        WHERE until_at < now() AND (until_at, tenant_id, queue, key) > ($1::timestamptz, $2::text, $3::text, $4::text)
        ORDER BY until_at, tenant_id, queue, key
        LIMIT $5
        FOR UPDATE SKIP LOCKED`,
    },
    // Second statement, in the same transaction: deletes the locked rows whose job is no longer
    // pending and unclaimed (a trailing fold would still take it). Its own snapshot, taken after
    // the locks, sees every enqueue of those keys that committed; none can run until this
    // commits, and a job never goes back to pending with no lease token. An enqueue waiting
    // on a deleted row inserts a fresh one. Fenced by the leader's epoch ($1).
    sweepDelete: {
      name: statementName(schema, `job_window_sweep_delete`),
      text: `WITH fence AS (${leaderFenceSql(schema, '$1')})
        DELETE FROM ${windows} w
        USING unnest($2::text[], $3::text[], $4::text[]) AS l(tenant_id, queue, key)
        WHERE w.tenant_id = l.tenant_id AND w.queue = l.queue AND w.key = l.key AND EXISTS (SELECT 1 FROM fence)
          AND NOT EXISTS (SELECT 1 FROM ${jobs} j WHERE j.id = w.job_id AND j.state = 'pending' AND j.lease_token IS NULL)
        RETURNING w.queue`,
    },
  } as const;
}

export type JobWindowQueries = ReturnType<typeof jobWindowQueries>;
