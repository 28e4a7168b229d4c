// One statement's rows, with a driver error translated to Baton's error classes (the one place
// each store's statements pass through).

import { translatePgError } from './errors.ts';
import type { Queryable, QueryConfigLike } from './pool.ts';

export async function queryRows<R>(on: Queryable, query: QueryConfigLike, values: unknown[]): Promise<R[]> {
  try {
    // Written out, not `{ ...query, values }`: on Node 20 a spread followed by another property
    // takes V8's slow path (about 0.6 µs here, against 0.06), and every statement passes here.
    return (await on.query<R>({ name: query.name, text: query.text, rowMode: query.rowMode, values })).rows;
  } catch (err) {
    throw translatePgError(err);
  }
}
