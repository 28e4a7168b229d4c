// Marks each session of Baton's own pool with a durable token floor before its first claim
// (queries/job-lease.ts, tokenFloor), which lets that session's claims commit without waiting for
// the WAL flush. An unmarked session claims with a synchronous commit: nothing depends on it.

import type pg from 'pg';
import type { QueryConfigLike } from './pool.ts';

/** A session whose mark failed this often stays unmarked. */
const MAX_ATTEMPTS = 3;

/**
 * Queues the mark on every checked-out client that lacks it. pg-pool emits 'acquire' before
 * handing the client out, so the mark precedes the caller's statements on that session.
 * `query` answers a row whose `mark` is NULL when it could not mark yet (no schema before
 * migrations): that session tries again on its next checkout, as often as it takes.
 */
export function installTokenFloor(pool: pg.Pool, query: QueryConfigLike): void {
  // Failed marks per session. While a mark is in flight, and once it has succeeded, the
  // session holds MAX_ATTEMPTS, so it is never sent twice at once nor again.
  const failed = new WeakMap<pg.PoolClient, number>();
  pool.on('acquire', (client) => {
    const n = failed.get(client) ?? 0;
    if (n >= MAX_ATTEMPTS) return;
    failed.set(client, MAX_ATTEMPTS);
    client.query<{ mark: string | null }>(query).then(
      (r) => {
        if (r.rows[0]?.mark == null) failed.set(client, n);
      },
      () => failed.set(client, n + 1),
    );
  });
}
