// Several worker processes on one database share a queue with no coordination beyond
// PostgreSQL: with three processes draining one backlog, every job runs exactly once (by the
// handlers' own logs, not the database), each process takes a share of the claims, and the
// database shows every job succeeded at its first attempt.

import { beforeEach, describe, expect, it } from 'vitest';
import { createBaton } from '../../src/index.ts';
import { readRuns } from '../flow-control/execution-log.ts';
import { useFleet } from '../flow-control/fleet.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';

const db = useTestDatabase();
const startFleet = useFleet(db);
const JOBS = 1_500;
const PROCESSES = 3;

beforeEach(async () => {
  await db.query('TRUNCATE baton.jobs, baton.workers, baton.finished_counts');
});

describe('worker processes on one database', () => {
  it('share one backlog: each job runs once, every process claims a share', async () => {
    const producer = createBaton({ connectionString: db.url, poolSize: 1 });
    try {
      await producer.enqueueMany(Array.from({ length: JOBS }, () => ({ jobType: 'work', queue: 'flow', payload: { ms: 2 } })));
    } finally {
      await producer.stop();
    }
    const f = await startFleet(PROCESSES);
    await waitFor(
      async () =>
        (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM baton.jobs WHERE state = 'succeeded'`)).rows[0]!.n === JOBS,
      { timeoutMs: 60_000, intervalMs: 50, message: 'every job to succeed' },
    );
    const runs = readRuns(f.logs, f.killedAt);
    expect(runs).toHaveLength(JOBS);
    expect(new Set(runs.map((r) => r.job)).size).toBe(JOBS);
    const perProcess = f.logs.map((_, i) => runs.filter((r) => r.worker === `w${i}`).length);
    // An even share is 500; a tenth of the backlog is far below it and still not nothing.
    for (const n of perProcess) expect(n, `claims per process: ${perProcess.join('/')}`).toBeGreaterThanOrEqual(JOBS / 10);
    const attempts = await db.query<{ attempt: number; n: number }>('SELECT attempt, count(*)::int AS n FROM baton.jobs GROUP BY attempt');
    expect(attempts.rows).toEqual([{ attempt: 1, n: JOBS }]);
  }, 120_000);
});
