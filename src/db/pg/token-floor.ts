// Marks each session of Baton's own pool with a durable token floor before its first claim
// (queries/job.ts, tokenFloor), which lets that session's claims commit without waiting for
// the WAL flush. An unmarked session claims with a synchronous commit: nothing depends on it.

import type pg from 'pg';
import type { QueryConfigLike } from './pool.ts';

/** A session whose mark failed this often (schema missing, say) stays unmarked. */
const MAX_ATTEMPTS = 3;

/**
 * Queues the mark on every checked-out client that lacks it. pg-pool emits 'acquire' before
 * handing the client out, so the mark precedes the caller's statements on that session.
 */
export function installTokenFloor(pool: pg.Pool, query: QueryConfigLike): void {
  const marked = new WeakSet<pg.PoolClient>();
  const sent = new WeakSet<pg.PoolClient>();
  const attempts = new WeakMap<pg.PoolClient, number>();
  pool.on('acquire', (client) => {
    const n = attempts.get(client) ?? 0;
    if (marked.has(client) || sent.has(client) || n >= MAX_ATTEMPTS) return;
    attempts.set(client, n + 1);
    sent.add(client);
    client.query(query).then(
      () => marked.add(client),
      () => sent.delete(client),
    );
  });
}
