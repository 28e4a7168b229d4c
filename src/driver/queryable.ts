// The structural subset of node-postgres the engine's seams take: anything that runs a query
// (a pg.Pool, a pg.PoolClient, a pg.Client, or a caller's own transaction).

export interface QueryConfigLike {
  name?: string;
  text: string;
  values?: unknown[];
  /** 'array': each row as an array of its columns, in order. */
  rowMode?: 'array';
}

export interface QueryResultLike<R> {
  rows: R[];
  rowCount: number | null;
}

/** Anything that can run a query: a pg.Pool, a pg.PoolClient or a pg.Client. */
export interface Queryable {
  query<R = Record<string, unknown>>(config: QueryConfigLike): Promise<QueryResultLike<R>>;
}
