// The chaos suite reads the engine's lease writes off the wire (test/chaos/write-recorder.ts).
// Here it reads the executor's real statements and answers, so a change of their shape
// (parameters, result rows) fails in the default suite instead of in a chaos run.

import { describe, expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import type { QueryConfigLike, QueryResultLike } from '../../src/db/pg/pool.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import type { WriteRecord } from '../chaos/history.ts';
import { writeKind, writeRecords } from '../chaos/write-recorder.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJobs } from '../helpers/factory.ts';

const db = useTestDatabase();

/** An executor whose every statement is read by the recorder, as the chaos worker does. */
function recordedExecutor(): { ex: PgExecutor; records: WriteRecord[] } {
  const records: WriteRecord[] = [];
  const pool = {
    async query<R>(config: QueryConfigLike): Promise<QueryResultLike<R>> {
      const res = await db.pool.query(config as never);
      const kind = writeKind(config);
      if (kind) records.push(...writeRecords(kind, config, res, undefined, { worker: 'w', sentAt: 0, at: 0 }));
      return res as unknown as QueryResultLike<R>;
    },
    connect: () => db.pool.connect(),
  };
  return { ex: new PgExecutor(pool, quoteSchema('baton')), records };
}

const seen = (records: WriteRecord[], kind: WriteRecord['kind']) =>
  records.filter((r) => r.kind === kind).map((r) => [r.jobId, r.token, r.rowsAffected]);

describe("the chaos write recorder on the executor's own statements", () => {
  it('reads every lease of start, heartbeat, complete, fail and release, written or fenced off', async () => {
    const { ex, records } = recordedExecutor();
    const ids = await insertJobs(db.pool, 4, { queue: 'rec' });
    const claimed = await ex.jobClaim({ queue: 'rec', limit: 4, owner: 'w', intoRunning: false, leaseMs: 60_000 });
    const leases = claimed.map((j) => ({ id: j.id, token: j.token }));
    expect(leases.map((l) => l.id).sort()).toEqual([...ids].sort());
    const all = (rows: number) => leases.map((l) => [l.id, l.token, rows]);

    await ex.jobMarkRunningMany({ leases });
    expect(seen(records, 'start')).toEqual(all(1));
    await ex.jobHeartbeatMany({ leases, leaseMs: 60_000 });
    expect(seen(records, 'heartbeat')).toEqual(all(1));

    // The first job's lease is taken over: every write under its old token is fenced off.
    const [first, second, third, fourth] = leases as [(typeof leases)[0], (typeof leases)[0], (typeof leases)[0], (typeof leases)[0]];
    await db.query(`UPDATE baton.jobs SET lease_token = nextval('baton.lease_token_seq') WHERE id = $1`, [first.id]);
    await ex.jobCompleteMany({ items: [first, second].map((l) => ({ ...l, result: null })) });
    expect(seen(records, 'complete')).toEqual([
      [first.id, first.token, 0],
      [second.id, second.token, 1],
    ]);
    await ex.jobFailMany({
      items: [{ ...third, error: { attempt: 1, token: third.token, kind: 'transient', name: 'Error', message: 'x' }, terminal: false }],
      backoffBaseMs: 10,
      backoffCapMs: 10,
    });
    expect(seen(records, 'fail')).toEqual([[third.id, third.token, 1]]);
    await ex.jobReleaseMany({ leases: [fourth, first], refundAttempt: true });
    expect(seen(records, 'release')).toEqual([
      [fourth.id, fourth.token, 1],
      [first.id, first.token, 0],
    ]);
  });
});
