// Connections through a transaction pooler (PgBouncer with pool_mode = transaction): each
// transaction may run on a different server session, so nothing may outlive a transaction on
// the session. This client sends every statement unnamed (no prepared statement is left on a
// session another client may get next); the pools that use it send no session settings
// (open-pool.ts), and the engine asks no session lock or LISTEN of them (create-baton.ts).

import pg from 'pg';
import type { Queryable } from '../../driver/queryable.ts';

/** A pg client that drops the name of every statement it is given, so none is prepared by name. */
export class UnnamedStatementClient extends pg.Client {}

const query = pg.Client.prototype.query;
// pg's query takes a config object, a text, or a Query (submitted as is: Baton's own
// InsertCommitNotify is never sent on this client, see canInsertCommitNotify).
UnnamedStatementClient.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
  const unnamed =
    config !== null && typeof config === 'object' && 'name' in config && !('submit' in config) ? { ...config, name: undefined } : config;
  return (query as (...args: unknown[]) => unknown).call(this, unnamed, ...rest);
} as typeof pg.Client.prototype.query;

/**
 * A caller's own client (a transactional enqueue or outbox record through the caller's pool),
 * as a Queryable that names no statement: a pooler in front of the caller's pool has the same
 * rule as in front of Baton's.
 */
export function unnamedQueryable(client: Queryable): Queryable {
  return { query: (config) => client.query({ ...config, name: undefined }) };
}
