// One short transaction on a client checked out for it. A client whose ROLLBACK fails is
// destroyed rather than handed back: it may still be inside the transaction.

import { translatePgError } from './errors.ts';
import { checkOut, type PgPoolLike, type Queryable } from './pool.ts';

/** `fn` runs in a transaction; it commits when `fn` resolves, rolls back when it throws or returns rollback. */
export async function inTransaction<T>(
  pool: PgPoolLike,
  fn: (c: Queryable, rollback: () => void) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  const conn = await checkOut(pool).catch((err: unknown) => {
    throw translatePgError(err);
  });
  let destroy = false;
  try {
    await conn.client.query({ text: begin });
    let rolledBack = false;
    const result = await fn(conn.client, () => {
      rolledBack = true;
    });
    await conn.client.query({ text: rolledBack ? 'ROLLBACK' : 'COMMIT' });
    return result;
  } catch (err) {
    await conn.client.query({ text: 'ROLLBACK' }).catch(() => {
      destroy = true;
    });
    throw translatePgError(err);
  } finally {
    conn.release(destroy);
  }
}
