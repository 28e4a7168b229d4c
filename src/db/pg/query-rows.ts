// One statement's rows, with a driver error translated to Baton's error classes (the one place
// each store's statements pass through).

import { translatePgError } from './errors.ts';
import type { Queryable, QueryConfigLike } from './pool.ts';

export async function queryRows<R>(on: Queryable, query: QueryConfigLike, values: unknown[]): Promise<R[]> {
  try {
    return (await on.query<R>({ ...query, values })).rows;
  } catch (err) {
    throw translatePgError(err);
  }
}
