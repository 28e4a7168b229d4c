// The chaos suite reads the leader lease's statements and the leader-only writes off the wire
// (test/chaos/leader-recorder.ts). Here it reads the real statements and answers, so a change
// of their names or parameters fails in the default suite instead of in a chaos run.

import { describe, expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { PgLeaderStore } from '../../src/db/pg/pg-leader.ts';
import { PgOutboxStore } from '../../src/db/pg/pg-outbox.ts';
import type { PgClientLike, PgPoolLike, QueryConfigLike, QueryResultLike } from '../../src/db/pg/pool.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import type { LeaderWriteRecord } from '../chaos/history.ts';
import { leaderKind, leaderRecord } from '../chaos/leader-recorder.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { takeLeaderLease } from '../helpers/leader.ts';

const db = useTestDatabase();
const schema = quoteSchema('baton');

/** A pool (and the clients it lends) whose every statement is read by the recorder, as the chaos worker does. */
function recordedPool(): { pool: PgPoolLike; records: LeaderWriteRecord[] } {
  const records: LeaderWriteRecord[] = [];
  const recorded = async <R>(run: () => Promise<unknown>, config: QueryConfigLike): Promise<QueryResultLike<R>> => {
    const res = (await run()) as never;
    const kind = leaderKind(config);
    if (kind) records.push(leaderRecord(kind, config, res, undefined, { worker: 'w', sentAt: 0, at: 0 }));
    return res;
  };
  const pool: PgPoolLike = {
    query: <R>(config: QueryConfigLike) => recorded<R>(() => db.pool.query(config as never), config),
    connect: async (): Promise<PgClientLike> => {
      const c = await db.pool.connect();
      return {
        query: <R>(config: QueryConfigLike) => recorded<R>(() => c.query(config as never), config),
        release: (err?: Error | boolean) => c.release(err),
        on: (event, listener) => c.on(event, listener),
        removeListener: (event, listener) => c.removeListener(event, listener),
      };
    },
  };
  return { pool, records };
}

const seen = (records: LeaderWriteRecord[]) => records.map((r) => [r.kind, r.epoch, r.changed]);

describe('the chaos leader recorder on the real statements', () => {
  it('reads acquire and renew with their epochs, and the fenced writes with the epoch they carried and whether they changed anything', async () => {
    await db.query('UPDATE baton.leader_lease SET expires_at = now()');
    const { pool, records } = recordedPool();
    const store = new PgLeaderStore(pool, schema);
    const ex = new PgExecutor(pool, schema);
    const outbox = new PgOutboxStore(pool, schema);

    const epoch = (await store.leaderAcquire({ holder: 'w', leaseMs: 60_000, lockKey: null, lockNamespace: 1, lastEpoch: null }))!;
    await store.leaderAcquire({ holder: 'x', leaseMs: 60_000, lockKey: null, lockNamespace: 1, lastEpoch: null });
    await store.leaderRenew({ holder: 'w', epoch, leaseMs: 60_000, lockKey: null });
    await insertJob(db.pool, { queue: 'rec', state: 'succeeded', finishedAt: { inMs: -1_000 } });
    await ex.jobPurgeScan({ after: '0', read: 10, ages: { succeeded: 0, cancelled: null, dead_lettered: null }, epoch });
    await ex.workerPrune({ epoch });
    await outbox.outboxPurge({ state: 'published', olderThanMs: 0, limit: 10, epoch });
    await store.leaderFenced({ epoch, idleMs: 10_000, stillLeader: () => true }, async () => undefined);
    const deposed = epoch;
    const current = await takeLeaderLease(db.pool);
    await store.leaderRenew({ holder: 'w', epoch: deposed, leaseMs: 60_000, lockKey: null });
    await store.leaderFenced({ epoch: deposed, idleMs: 10_000, stillLeader: () => true }, async () => undefined);

    expect(seen(records)).toEqual([
      ['acquire', epoch, true],
      ['acquire', null, false],
      ['renew', epoch, true],
      ['job-purge', epoch, true],
      ['worker-prune', epoch, false],
      ['outbox-purge', epoch, false],
      ['fence', epoch, true],
      ['renew', deposed, false],
      ['fence', deposed, false],
    ]);
    expect(current).not.toBe(deposed);
  });
});
