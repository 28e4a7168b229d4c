// The private cluster helper: starts on a free port, survives an immediate
// crash-restart with committed data intact, and removes itself.
import { existsSync } from 'node:fs';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts';

describe('pg-cluster', () => {
  let cluster: PgCluster | undefined;
  afterAll(async () => cluster?.destroy());

  it('starts, crash-restarts with data intact, and destroys itself', async () => {
    cluster = await startPgCluster();
    expect(cluster.port).not.toBe(5432);
    const c1 = new pg.Client({ connectionString: cluster.url() });
    await c1.connect();
    await c1.query('CREATE TABLE t (x int)');
    await c1.query('INSERT INTO t VALUES (42)');
    const killed = new Promise<unknown>((resolve) => c1.on('error', resolve));
    await cluster.restart();
    await killed;
    await c1.end().catch(() => undefined);
    const c2 = new pg.Client({ connectionString: cluster.url() });
    await c2.connect();
    const r = await c2.query<{ x: number }>('SELECT x FROM t');
    expect(r.rows).toEqual([{ x: 42 }]);
    await c2.end();
    const dir = cluster.dataDir;
    await cluster.destroy();
    expect(existsSync(dir)).toBe(false);
  });
});
