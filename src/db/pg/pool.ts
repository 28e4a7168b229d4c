// The structural subset of node-postgres that Baton needs, so callers may pass
// a pg.Pool, a pg.Client or anything shaped like them.

import type { Queryable } from '../../driver/queryable.ts';

export type { Queryable, QueryConfigLike, QueryResultLike } from '../../driver/queryable.ts';

export interface PgClientLike extends Queryable {
  release(err?: Error | boolean): void;
  on?(event: 'error', listener: (err: Error) => void): unknown;
  removeListener?(event: 'error', listener: (err: Error) => void): unknown;
}

export interface PgPoolLike extends Queryable {
  connect(): Promise<PgClientLike>;
}

/** A client checked out of the pool; `release` hands it back, or destroys it when told to or when its socket died. */
export interface CheckedOut {
  client: PgClientLike;
  release(destroy?: boolean): void;
}

/**
 * Checks a client out with an 'error' listener on it until release. pg-pool takes its own
 * listener off a checked-out client, so a socket that dies meanwhile would emit an unhandled
 * 'error' and end the process. The queries in flight fail on their own and say why.
 */
export async function checkOut(pool: PgPoolLike): Promise<CheckedOut> {
  const client = await pool.connect();
  let died = false;
  const onError = () => {
    died = true;
  };
  client.on?.('error', onError);
  return {
    client,
    release(destroy = false) {
      client.removeListener?.('error', onError);
      client.release(destroy || died);
    },
  };
}

/**
 * Asks for `n` pool connections at once and hands each back idle as soon as it is open, so the
 * first statements that run side by side (a claim and an outcome write) do not each wait for a
 * new session. A pool already at its size lends the same one again (no deadlock). Best effort:
 * a connection that fails is left to the statement that needs it to report.
 */
export async function warmPool(pool: PgPoolLike, n: number): Promise<void> {
  const open = () =>
    checkOut(pool).then(
      (c) => c.release(),
      () => undefined,
    );
  await Promise.all(Array.from({ length: n }, open));
}
