// Conformance of the health reads: how long due jobs have waited per queue (future and
// finished jobs not counted), the size and vacuum state of Baton's tables, and the
// server's oldest transaction horizon, which an open snapshot holds back.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { insertJob } from '../helpers/factory.ts';
import { ex, fresh, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();

describe('healthOldestDue', () => {
  it('per queue: seconds since the oldest due pending job became due, and how many are due', async () => {
    const [a, b] = [fresh('due'), fresh('due')];
    await insertJob(db.pool, { queue: a, runAt: { inMs: -600_000 } });
    await insertJob(db.pool, { queue: a, runAt: { inMs: -60_000 } });
    await insertJob(db.pool, { queue: a, state: 'succeeded', runAt: { inMs: -3_600_000 } });
    await insertJob(db.pool, { queue: b, runAt: { inMs: 600_000 } });
    const due = await ex.healthOldestDue();
    const qa = due.find((q) => q.queue === a);
    expect(qa?.due).toBe(2);
    expect(qa!.oldestDueSeconds).toBeGreaterThanOrEqual(599);
    expect(qa!.oldestDueSeconds).toBeLessThan(700);
    expect(due.some((q) => q.queue === b)).toBe(false);
  });
});

describe('healthTableStats', () => {
  it("lists Baton's tables with their sizes, and a vacuum once it ran", async () => {
    await db.query('VACUUM baton.workers');
    const tables = await ex.healthTableStats();
    const names = tables.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['jobs', 'workers', 'schema_migrations']));
    const jobs = tables.find((t) => t.name === 'jobs')!;
    expect(jobs.totalBytes).toBeGreaterThanOrEqual(jobs.tableBytes + jobs.indexBytes);
    expect(jobs.indexBytes).toBeGreaterThan(0);
    expect(tables.find((t) => t.name === 'workers')!.lastVacuumAt).toBeInstanceOf(Date);
  });
});

describe('jobsDeadTuples and jobsVacuum', () => {
  it('counts the dead versions a delete leaves, and a vacuum removes them and keeps the session timeout', async () => {
    const queue = fresh('dead');
    await insertJob(db.pool, { queue });
    await insertJob(db.pool, { queue });
    await db.query('DELETE FROM baton.jobs WHERE queue = $1', [queue]);
    // The statistics reach the shared counts when the deleting session reports them (within a second).
    await expect.poll(async () => (await ex.jobDeadTuples()).dead, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    expect((await ex.jobDeadTuples()).vacuuming).toBe(false);
    const count = async () =>
      (await db.query<{ n: number }>(`SELECT vacuum_count::int AS n FROM pg_stat_user_tables WHERE relid = 'baton.jobs'::regclass`))
        .rows[0]!.n;
    const before = await count();
    const timeout = (await db.query<{ t: string }>('SHOW statement_timeout')).rows[0]!.t;
    await ex.jobVacuum();
    await expect.poll(count, { timeout: 10_000 }).toBe(before + 1);
    await expect.poll(async () => (await ex.jobDeadTuples()).dead, { timeout: 10_000 }).toBe(0);
    // The vacuum lifted the statement timeout on its own session only, and put it back.
    const timeouts = await Promise.all(Array.from({ length: 10 }, () => db.query<{ t: string }>('SHOW statement_timeout')));
    expect(new Set(timeouts.map((r) => r.rows[0]!.t))).toEqual(new Set([timeout]));
  });
});

describe('healthServerHorizon', () => {
  it('an open snapshot holds the horizon back by every transaction that commits after it', async () => {
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await holder.query('SELECT txid_current()');
      for (let i = 0; i < 12; i++) await db.query('SELECT txid_current()');
      const h = await ex.healthServerHorizon();
      expect(h.sessionXminAge).toBeGreaterThanOrEqual(12);
      expect(h.oldestTransactionSeconds).toBeGreaterThanOrEqual(0);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }
  });
});
