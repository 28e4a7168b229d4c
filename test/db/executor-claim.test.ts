// Conformance of jobClaim and jobMarkRunningMany on a real database: claim order, tokens,
// queue isolation, slot bounds, and the lease written to the row (database clock).

import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import type { LeasedJob } from '../../src/types/job.ts';
import { insertJob, insertJobs } from '../helpers/factory.ts';
import { claim, ex, fresh, ms, row, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();

describe('jobClaim', () => {
  it('claims by priority DESC, then run_at, then id, and holds back delayed jobs', async () => {
    const queue = fresh();
    const a = await insertJob(db.pool, { queue, priority: 0, runAt: { inMs: -3_000 } });
    const b = await insertJob(db.pool, { queue, priority: 5, runAt: { inMs: -1_000 } });
    const c = await insertJob(db.pool, { queue, priority: 5, runAt: { inMs: -2_000 } });
    const d = await insertJob(db.pool, { queue, priority: 0 });
    // d ties with a on priority and run_at (to the microsecond): the id decides.
    await db.query(`UPDATE baton.jobs SET run_at = (SELECT run_at FROM baton.jobs WHERE id = $1) WHERE id = $2`, [a, d]);
    const delayed = await insertJob(db.pool, { queue, priority: 100, runAt: { inMs: 60_000 } });

    // Limits that cut between neighbours show which rows the database picked.
    expect((await claim(queue, 1)).map((j) => j.id)).toEqual([c]);
    expect((await claim(queue, 2)).map((j) => j.id)).toEqual([b, a]);
    expect((await claim(queue, 10)).map((j) => j.id)).toEqual([d]);
    expect(await claim(queue, 10)).toEqual([]);
    expect((await row(delayed)).state).toBe('pending');

    // Once its time comes (database clock), the delayed job is claimable.
    await db.query(`UPDATE baton.jobs SET run_at = now() WHERE id = $1`, [delayed]);
    expect((await claim(queue, 10)).map((j) => j.id)).toEqual([delayed]);
  });

  it('issues strictly increasing, distinct tokens across claims', async () => {
    const queue = fresh();
    await insertJobs(db.pool, 9, { queue });
    const batches = [await claim(queue, 3), await claim(queue, 3), await claim(queue, 3)];
    const tokens = batches.map((b) => b.map((j) => BigInt(j.token)));
    expect(new Set(tokens.flat()).size).toBe(9);
    for (let i = 1; i < tokens.length; i++) {
      // biome-ignore lint/complexity/useMathMinMax: tokens are bigints, which Math.max does not take.
      const prevMax = tokens[i - 1]!.reduce((m, t) => (t > m ? t : m));
      // biome-ignore lint/complexity/useMathMinMax: as above.
      const curMin = tokens[i]!.reduce((m, t) => (t < m ? t : m));
      expect(curMin > prevMax).toBe(true);
    }
    // The token in the row is the one handed out.
    for (const j of batches.flat()) expect((await row(j.id)).lease_token).toBe(j.token);
  });

  it('isolates queues', async () => {
    const mine = fresh();
    const other = fresh();
    const theirs = await insertJob(db.pool, { queue: other });
    expect(await claim(mine, 10)).toEqual([]);
    expect((await row(theirs)).state).toBe('pending');
    expect((await claim(other, 10)).map((j) => j.id)).toEqual([theirs]);
  });

  it('never claims more rows than the free slots, also under concurrent claims', async () => {
    const queue = fresh();
    await insertJobs(db.pool, 10, { queue });
    expect(await claim(queue, 0)).toEqual([]);
    expect(await claim(queue, 3)).toHaveLength(3);
    const live = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1 AND state <> 'pending'`, [queue]);
    expect(live.rows[0].n).toBe(3);

    // Two workers claiming at once: SKIP LOCKED, no row twice, none beyond the 7 left.
    const [x, y] = await Promise.all([claim(queue, 5, { owner: 'w-x' }), claim(queue, 5, { owner: 'w-y' })]);
    expect(x.length).toBeLessThanOrEqual(5);
    expect(y.length).toBeLessThanOrEqual(5);
    const ids = [...x, ...y].map((j) => j.id);
    expect(new Set(ids).size).toBe(ids.length);
    const rest = await claim(queue, 10);
    expect(ids.length + rest.length).toBe(7);
  });

  it('into running: spends an attempt, sets token, owner, expiry and started_at on the database clock', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue, attempt: 0 });
    const [job] = await claim(queue, 1, { owner: 'w-run', intoRunning: true, leaseMs: 7_500 });
    expect(job).toMatchObject({ id, state: 'running', attempt: 1, leaseOwner: 'w-run' });
    const r = await row(id);
    expect(r).toMatchObject({ state: 'running', attempt: 1, lease_owner: 'w-run', lease_token: job!.token });
    expect(ms(r.lease_expires_at, r.updated_at)).toBe(7_500);
    expect(r.started_at).toEqual(r.updated_at);
  });

  it.each([true, false])(
    'the claimed job is the row as read back, also the fields the claim leaves out (into running: %s)',
    async (intoRunning) => {
      const queue = fresh();
      const earlier = { attempt: 1, token: '3', kind: 'transient', name: 'Error', message: 'boom', at: '2026-01-01T00:00:00.000Z' };
      const fresher = await insertJob(db.pool, { queue, tenantId: 't-1', payload: { n: 1 }, priority: 2, idempotencyKey: queue });
      const retried = await insertJob(db.pool, {
        queue,
        attempt: 1,
        lastError: earlier,
        errors: [earlier],
        replayCount: 2,
        runAt: { inMs: -5_000 },
      });
      const claimed = await claim(queue, 2, { owner: 'w-row', intoRunning, leaseMs: 12_345 });
      expect(claimed.map((j) => j.id)).toEqual([fresher, retried]);
      for (const job of claimed) {
        const stored = (await ex.jobGet({ id: job.id })) as LeasedJob;
        expect(stored.state).toBe(intoRunning ? 'running' : 'leased');
        // Times come back as epoch milliseconds with microseconds: within a millisecond of the row.
        const times = ['runAt', 'createdAt', 'updatedAt', 'startedAt', 'leaseExpiresAt'] as const;
        const drift = (a: Date | null, b: Date | null) => (a && b ? Math.abs(a.getTime() - b.getTime()) <= 1 : a === b);
        expect(times.filter((t) => !drift(job[t] as Date | null, stored[t] as Date | null))).toEqual([]);
        const strip = (j: object) => Object.fromEntries(Object.entries(j).filter(([k]) => !(times as readonly string[]).includes(k)));
        // Progress is read with the job, never claimed: the claim row stays as narrow as before.
        expect('progress' in job).toBe(false);
        expect(stored.progress).toBeNull();
        const { progress: _progress, ...storedRest } = stored;
        expect(strip(job)).toEqual(strip(storedRest));
      }
    },
  );

  it('not into running: leased without started_at, then jobMarkRunningMany starts it', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue });
    const [job] = await claim(queue, 1, { intoRunning: false });
    expect(job!.state).toBe('leased');
    let r = await row(id);
    expect(r).toMatchObject({ state: 'leased', attempt: 1, started_at: null, lease_owner: 'w-a' });

    const ok = await ex.jobMarkRunningMany({ leases: [{ id, token: job!.token }] });
    expect([...ok]).toEqual([id]);
    r = await row(id);
    expect(r).toMatchObject({ state: 'running', attempt: 1, lease_token: job!.token });
    expect(r.started_at).toEqual(r.updated_at);
    // Marking an already running job again changes nothing.
    const before = await row(id);
    expect((await ex.jobMarkRunningMany({ leases: [{ id, token: job!.token }] })).size).toBe(0);
    expect(await row(id)).toEqual(before);
  });

  it('reads the claim by column name from a pool that answers with objects instead of arrays', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue, payload: { n: 7 } });
    // A pool-like wrapper that drops node-postgres' rowMode.
    const lossy = { query: (c: pg.QueryConfig) => db.pool.query({ text: c.text, values: c.values }), connect: () => db.pool.connect() };
    const viaObjects = new PgExecutor(lossy, quoteSchema(db.schema));
    const [job] = await viaObjects.jobClaim({ queue, limit: 1, owner: 'w-objects', leaseMs: 60_000, intoRunning: true });
    const r = await row(id);
    expect(job).toMatchObject({
      id,
      queue,
      payload: { n: 7 },
      state: 'running',
      attempt: 1,
      token: r.lease_token,
      leaseOwner: 'w-objects',
    });
    expect(job!.createdAt).toEqual(r.created_at);
  });
});
