// The pools Baton opens itself, and the settings each of their sessions runs with (sent once
// per new connection, ahead of any statement of its first user).
//
// JIT off: Baton's statements read and write a few index pages each, and none runs long enough
// for compiled expressions to pay back their compilation. The planner turns JIT on from its
// cost estimate alone, and the fair claim's estimate grows with the pending rows the statistics
// last saw (its per-tenant LIMIT is an expression the planner cannot size): once autovacuum's
// ANALYZE had seen a backlog of a few hundred thousand jobs, every fair claim spent about 30 ms
// compiling (about 500 ms with a generic plan, which also inlines and optimises) for well under
// 1 ms of work, on an idle queue too, until the next ANALYZE saw the backlog gone.
//
// No parallel workers, for the same reason: every statement reads index ranges of the live
// work, but before the first ANALYZE of a large table the planner guesses the live leases at
// a fifth of it and gathers two workers for the counts by queue and the flow snapshot; starting
// them cost 8 to 25 ms a scrape next to a million finished rows, for a read of a few pages.

import pg from 'pg';
import { isMultiHost, PrimaryClient } from './multi-host.ts';
import { UnnamedStatementClient } from './pooler-client.ts';

export const SESSION_SETTINGS_SQL = 'SET jit = off; SET max_parallel_workers_per_gather = 0';

/** How Baton's pools reach PostgreSQL: directly (a session per connection) or through a transaction pooler (docs/scaling.md). */
export type PoolerMode = 'none' | 'transaction';

/**
 * A pool whose new sessions run SESSION_SETTINGS_SQL first. A failed SET is not fatal: that
 * session runs with the server's settings. Idle clients that lose their connection emit
 * 'error' on the pool; the listener keeps that from ending the process. Through a transaction
 * pooler, no session setting is sent (it would stay on a server session other clients get
 * next) and every statement goes unnamed (pooler-client.ts).
 */
export function openPool(config: pg.PoolConfig, pooler: PoolerMode = 'none'): pg.Pool {
  if (pooler === 'transaction' && isMultiHost(config)) {
    // A pooler in front of several servers picks the host itself (its own configuration).
    throw new Error('a transaction pooler URL names one host: list the servers in the pooler, not in the URL');
  }
  const Client = pooler === 'transaction' ? UnnamedStatementClient : isMultiHost(config) ? PrimaryClient : undefined;
  const pool = new pg.Pool(Client ? { ...config, Client } : config);
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    // The SET goes out before the client reaches its first user, whose own 'error' listener
    // (checkOut's) is attached a tick later: a connection reset in between would emit 'error'
    // on a client with no listener and end the process. The query in flight fails on its own.
    client.on('error', () => undefined);
    if (pooler === 'none') client.query(SESSION_SETTINGS_SQL).catch(() => undefined);
  });
  return pool;
}
