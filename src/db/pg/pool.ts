// The structural subset of node-postgres that Baton needs, so callers may pass
// a pg.Pool, a pg.Client or anything shaped like them.

export interface QueryConfigLike {
  name?: string;
  text: string;
  values?: unknown[];
}

export interface QueryResultLike<R> {
  rows: R[];
  rowCount: number | null;
}

/** Anything that can run a query: a pg.Pool, a pg.PoolClient or a pg.Client. */
export interface Queryable {
  query<R = Record<string, unknown>>(config: QueryConfigLike): Promise<QueryResultLike<R>>;
}

export interface PgClientLike extends Queryable {
  release(err?: Error | boolean): void;
}

export interface PgPoolLike extends Queryable {
  connect(): Promise<PgClientLike>;
}
