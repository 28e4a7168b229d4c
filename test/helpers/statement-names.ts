// A pool that records the name of every named statement it sends, on pool.query or on a
// checked-out client: for tests that a path sends exactly the statements it should (a plain
// enqueue or start none of a feature's). The caller ends the pool.

import pg from 'pg';

export function namingPool(url: string): { pool: pg.Pool; names: string[] } {
  const names: string[] = [];
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...a: unknown[]) => unknown;
    (client as unknown as { query: unknown }).query = (config: { name?: string }, ...rest: unknown[]) => {
      if (typeof config?.name === 'string') names.push(config.name);
      return query(config, ...rest);
    };
  });
  return { pool, names };
}
