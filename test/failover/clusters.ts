// The failover suites' pair of clusters: a primary (wal_level replica) and its streaming
// standby, started before a describe block's tests and destroyed after them, whatever the tests
// did to either (stopped, promoted, destroyed early).

import { afterAll, beforeAll } from 'vitest';
import { type PgCluster, startPgCluster, startStandby } from '../helpers/pg-cluster.ts';

/** Call inside describe: `ready` receives the pair before the first test. */
export function usePrimaryAndStandby(ready: (primary: PgCluster, standby: PgCluster) => void): void {
  let primary: PgCluster | undefined;
  let standby: PgCluster | undefined;
  beforeAll(async () => {
    primary = await startPgCluster({ settings: { wal_level: 'replica' } });
    standby = await startStandby(primary);
    ready(primary, standby);
  });
  afterAll(async () => {
    await standby?.destroy();
    await primary?.destroy();
  });
}
