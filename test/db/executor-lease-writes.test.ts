// Conformance of the lease writes (jobHeartbeatMany, jobCompleteMany, jobFailMany, jobReleaseMany):
// fenced by the lease token, with state, attempt, lease and timestamps read back from the row.

import { describe, expect, it } from 'vitest';
import type { Lease } from '../../src/driver/executor.ts';
import { insertJob, insertJobs } from '../helpers/factory.ts';
import { attemptError, claim, ex, expireLeases, fresh, ms, reapExpired, row, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();
const progressOf = async (id: string) =>
  (await db.query<{ progress: unknown }>('SELECT progress FROM baton.jobs WHERE id = $1', [id])).rows[0]!.progress;

describe('fencing', () => {
  /**
   * The slow worker: A claims, its lease expires and is reaped, B claims the job again
   * (leased, not started). Returns both leases.
   */
  async function staleAndCurrent(queue: string): Promise<{ id: string; stale: Lease; current: Lease }> {
    const id = await insertJob(db.pool, { queue });
    const [a] = await claim(queue, 1, { owner: 'w-slow' });
    await expireLeases([id]);
    expect(await reapExpired([id])).toEqual([{ id, state: 'pending', queue, expired: true }]);
    const [b] = await claim(queue, 1, { owner: 'w-new', intoRunning: false });
    expect(b!.id).toBe(id);
    expect(BigInt(b!.token) > BigInt(a!.token)).toBe(true);
    return { id, stale: { id, token: a!.token }, current: { id, token: b!.token } };
  }

  it('a stale token changes nothing on any write, and the current token works', async () => {
    const { id, stale, current } = await staleAndCurrent(fresh());
    const before = await row(id);
    expect(before).toMatchObject({ state: 'leased', lease_owner: 'w-new', attempt: 2 });

    expect((await ex.jobCompleteMany({ items: [{ ...stale, result: { by: 'slow' } }] })).size).toBe(0);
    expect(await row(id)).toEqual(before);
    expect(
      (
        await ex.jobFailMany({
          items: [{ ...stale, error: attemptError(1, stale.token), terminal: true }],
          backoffBaseMs: 1,
          backoffCapMs: 1,
        })
      ).size,
    ).toBe(0);
    expect(await row(id)).toEqual(before);
    expect((await ex.jobHeartbeatMany({ leases: [stale], leaseMs: 600_000 })).alive.size).toBe(0);
    expect(await row(id)).toEqual(before);
    expect((await ex.jobMarkRunningMany({ leases: [stale] })).size).toBe(0);
    expect(await row(id)).toEqual(before);
    expect((await ex.jobReleaseMany({ leases: [stale], refundAttempt: true })).size).toBe(0);
    expect(await row(id)).toEqual(before);
    expect((await ex.jobProgressMany({ items: [{ ...stale, progress: '{"by":"slow"}' }] })).size).toBe(0);
    expect(await row(id)).toEqual(before);
    expect(await progressOf(id)).toBeNull();

    // The current owner proceeds: start, progress, heartbeat (expiry = now + lease), complete.
    expect([...(await ex.jobMarkRunningMany({ leases: [current] }))]).toEqual([id]);
    expect([...(await ex.jobProgressMany({ items: [{ ...current, progress: '42' }] }))]).toEqual([id]);
    expect(await progressOf(id)).toBe(42);
    expect([...(await ex.jobHeartbeatMany({ leases: [current], leaseMs: 12_345 })).alive]).toEqual([id]);
    const hb = await row(id);
    expect(ms(hb.lease_expires_at, hb.updated_at)).toBe(12_345);
    expect([...(await ex.jobCompleteMany({ items: [{ ...current, result: { by: 'new' } }] }))]).toEqual([id]);
    const done = await row(id);
    expect(done).toMatchObject({
      state: 'succeeded',
      result: { by: 'new' },
      lease_owner: null,
      lease_expires_at: null,
      lease_token: current.token,
    });
    expect(done.finished_at).toEqual(done.updated_at);

    // After the outcome, even the current token writes nothing more.
    expect((await ex.jobCompleteMany({ items: [{ ...current, result: 'again' }] })).size).toBe(0);
    expect((await ex.jobHeartbeatMany({ leases: [current], leaseMs: 1_000 })).alive.size).toBe(0);
    expect((await ex.jobProgressMany({ items: [{ ...current, progress: '100' }] })).size).toBe(0);
    expect(await row(id)).toEqual(done);
    expect(await progressOf(id)).toBe(42);
  });

  it('a stale token writes nothing while the reaped job waits in pending', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue });
    const [a] = await claim(queue, 1);
    await expireLeases([id]);
    await reapExpired([id]);
    const before = await row(id);
    expect(before.state).toBe('pending');
    const lease = { id, token: a!.token };
    expect((await ex.jobCompleteMany({ items: [{ ...lease, result: null }] })).size).toBe(0);
    expect(
      (
        await ex.jobFailMany({
          items: [{ ...lease, error: attemptError(1, a!.token), terminal: false }],
          backoffBaseMs: 1,
          backoffCapMs: 1,
        })
      ).size,
    ).toBe(0);
    expect((await ex.jobHeartbeatMany({ leases: [lease], leaseMs: 1_000 })).alive.size).toBe(0);
    expect(await row(id)).toEqual(before);
  });

  it('a batched completion writes only the rows whose token is current', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 3, { queue });
    const mine = await claim(queue, 3, { owner: 'w-a' });
    const tokenOf = new Map(mine.map((j) => [j.id, j.token]));
    // The middle job is taken over by another worker.
    await expireLeases([ids[1]!]);
    await reapExpired([ids[1]!]);
    const [taken] = await claim(queue, 1, { owner: 'w-b' });
    expect(taken!.id).toBe(ids[1]);
    const takenBefore = await row(ids[1]!);

    const ok = await ex.jobCompleteMany({ items: ids.map((id) => ({ id, token: tokenOf.get(id)!, result: { id } })) });
    expect([...ok].sort()).toEqual([ids[0], ids[2]].sort());
    expect(await row(ids[1]!)).toEqual(takenBefore);
    for (const id of [ids[0]!, ids[2]!]) expect(await row(id)).toMatchObject({ state: 'succeeded', result: { id } });
  });

  it('stores no result (null or undefined) as SQL NULL and every other result on its own row', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 4, { queue });
    const leases = (await claim(queue, 4)).sort((a, b) => Number(a.id) - Number(b.id));
    const results: unknown[] = [null, { n: 1 }, undefined, 'two'];
    const ok = await ex.jobCompleteMany({ items: leases.map((l, i) => ({ id: l.id, token: l.token, result: results[i] })) });
    expect(ok.size).toBe(4);
    const stored = await db.query<{ id: string; sql_null: boolean; result: unknown }>(
      `SELECT id::text, result IS NULL AS sql_null, result FROM baton.jobs WHERE id = ANY($1::bigint[]) ORDER BY id`,
      [ids],
    );
    expect(stored.rows.map((r) => [r.sql_null, r.result])).toEqual([
      [true, null],
      [false, { n: 1 }],
      [true, null],
      [false, 'two'],
    ]);
    // A batch of nothing but null results (sent without a results array) stores NULL too.
    const [more] = await insertJobs(db.pool, 1, { queue });
    const [lease] = await claim(queue, 1);
    expect((await ex.jobCompleteMany({ items: [{ id: lease!.id, token: lease!.token, result: null }] })).size).toBe(1);
    expect((await db.query(`SELECT result IS NULL AS n FROM baton.jobs WHERE id = $1`, [more])).rows[0]).toEqual({ n: true });
  });

  it('a batch naming one job twice (stale and current token) answers with the ids written, never "all of them"', async () => {
    const queue = fresh();
    const [id] = await insertJobs(db.pool, 1, { queue });
    const [stale] = await claim(queue, 1, { owner: 'w-a' });
    await expireLeases([id!]);
    await reapExpired([id!]);
    const [current] = await claim(queue, 1, { owner: 'w-b' });
    const [other] = await insertJobs(db.pool, 1, { queue: `${queue}-2` });
    const [lost] = await claim(`${queue}-2`, 1, { owner: 'w-a' });
    await expireLeases([other!]);
    await reapExpired([other!]);
    // Three leases, two rows: counting written rows against the batch size can never say "all".
    const leases = [stale!, current!, lost!].map((j) => ({ id: j.id, token: j.token }));
    expect([...(await ex.jobHeartbeatMany({ leases, leaseMs: 60_000 })).alive]).toEqual([id]);
    expect([...(await ex.jobCompleteMany({ items: leases.map((l) => ({ ...l, result: null })) }))]).toEqual([id]);
    expect(await row(id!)).toMatchObject({ state: 'succeeded', lease_token: current!.token });
    expect(await row(other!)).toMatchObject({ state: 'pending' });
  });
});

describe('jobHeartbeatMany', () => {
  it('extends every live lease of the batch to now() + leaseMs, and changes nothing else', async () => {
    const queue = fresh();
    await insertJobs(db.pool, 3, { queue });
    const [leased] = await claim(queue, 1, { intoRunning: false, leaseMs: 1_000 });
    const [running, finished] = await claim(queue, 2, { intoRunning: true, leaseMs: 1_000 });
    await ex.jobCompleteMany({ items: [{ id: finished!.id, token: finished!.token, result: null }] });
    const before = new Map(await Promise.all([leased!, running!, finished!].map(async (j) => [j.id, await row(j.id)] as const)));

    const leases = [leased!, running!, finished!].map((j) => ({ id: j.id, token: j.token }));
    const ok = await ex.jobHeartbeatMany({ leases, leaseMs: 45_000 });
    expect([...ok.alive].sort()).toEqual([leased!.id, running!.id].sort());
    expect(ok.cancelRequested.size).toBe(0);
    for (const j of [leased!, running!]) {
      const r = await row(j.id);
      const b = before.get(j.id)!;
      // The new expiry counts from the heartbeat's own now(), past the old one.
      expect(ms(r.lease_expires_at, r.updated_at)).toBe(45_000);
      expect(ms(r.lease_expires_at, b.lease_expires_at)).toBeGreaterThan(0);
      const rest = (x: Record<string, unknown>) => ({ ...x, lease_expires_at: null, updated_at: null });
      expect(rest(r)).toEqual(rest(b));
    }
    // A job with an outcome has no lease left to extend.
    expect(await row(finished!.id)).toEqual(before.get(finished!.id));
  });
});

describe('jobFailMany', () => {
  it('transient: back to pending with a full-jitter delay within min(cap, base * 2^(attempt-1)) of the database now', async () => {
    const queue = fresh();
    // Running jobs on their 4th attempt: ceiling = min(cap, 100 * 2^3) = 800 ms.
    const ids = await insertJobs(db.pool, 20, { queue, state: 'running', attempt: 4, maxAttempts: 10 });
    const leases = await Promise.all(ids.map(async (id) => ({ id, token: (await row(id)).lease_token as string })));
    const states = await ex.jobFailMany({
      items: leases.map((l) => ({ ...l, error: attemptError(4, l.token), terminal: false })),
      backoffBaseMs: 100,
      backoffCapMs: 60_000,
    });
    expect([...states.values()]).toEqual(ids.map(() => 'pending'));
    const delays: number[] = [];
    for (const id of ids) {
      const r = await row(id);
      expect(r).toMatchObject({
        state: 'pending',
        attempt: 4,
        lease_owner: null,
        lease_expires_at: null,
        finished_at: null,
        dead_letter_reason: null,
      });
      delays.push(ms(r.run_at, r.updated_at));
    }
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(800);
    }
    // Full jitter, not a fixed delay: 20 draws are not all equal and not all in the lower half.
    expect(new Set(delays).size).toBeGreaterThan(1);
    expect(Math.max(...delays)).toBeGreaterThan(400);

    // The cap bounds the delay once base * 2^(n-1) exceeds it.
    const capped = await insertJob(db.pool, { queue, state: 'running', attempt: 9, maxAttempts: 10 });
    const token = (await row(capped)).lease_token as string;
    await ex.jobFailMany({
      items: [{ id: capped, token, error: attemptError(9, token), terminal: false }],
      backoffBaseMs: 1_000,
      backoffCapMs: 50,
    });
    const c = await row(capped);
    expect(ms(c.run_at, c.updated_at)).toBeLessThanOrEqual(50);
  });

  it("keeps each attempt's error (attempt, kind, message, stack, database time) in a growing history", async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue, maxAttempts: 5 });
    for (let n = 1; n <= 2; n++) {
      const [job] = await claim(queue, 1);
      expect(job!.attempt).toBe(n);
      await ex.jobFailMany({
        items: [{ id, token: job!.token, error: attemptError(n, job!.token, { message: `boom ${n}` }), terminal: false }],
        backoffBaseMs: 1,
        backoffCapMs: 1,
      });
      const r = await row(id);
      expect(r.state).toBe('pending');
      expect(r.errors).toHaveLength(n);
      const entry = r.errors[n - 1];
      expect(entry).toMatchObject({ attempt: n, token: job!.token, kind: 'transient', name: 'Error', message: `boom ${n}` });
      expect(entry.stack).toContain(`failed attempt ${n}`);
      expect(Math.abs(Date.parse(entry.at) - r.updated_at.getTime())).toBeLessThanOrEqual(1);
      expect(r.last_error).toEqual(entry);
      // Make it due now (the jittered run_at may lie up to 1 ms ahead).
      await db.query(`UPDATE baton.jobs SET run_at = now() WHERE id = $1`, [id]);
    }
    expect((await row(id)).errors.map((e: { message: string }) => e.message)).toEqual(['boom 1', 'boom 2']);
  });

  it('bounds the error history, dropping the oldest entries', async () => {
    const queue = fresh();
    const old = Array.from({ length: 100 }, (_, i) => ({ attempt: i, kind: 'transient', message: `old ${i}` }));
    const id = await insertJob(db.pool, { queue, state: 'running', attempt: 1, maxAttempts: 5, errors: old });
    const token = (await row(id)).lease_token as string;
    await ex.jobFailMany({
      items: [{ id, token, error: attemptError(1, token, { message: 'newest' }), terminal: false }],
      backoffBaseMs: 1,
      backoffCapMs: 1,
    });
    const r = await row(id);
    expect(r.errors).toHaveLength(100);
    expect(r.errors[0].message).toBe('old 1');
    expect(r.errors[99].message).toBe('newest');
  });

  it('terminal: dead-lettered at once with reason terminal_error, budget left or not', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue, maxAttempts: 5 });
    const [job] = await claim(queue, 1);
    const runAtBefore = (await row(id)).run_at;
    const states = await ex.jobFailMany({
      items: [{ id, token: job!.token, error: attemptError(1, job!.token, { kind: 'terminal', name: 'TerminalError' }), terminal: true }],
      backoffBaseMs: 1_000,
      backoffCapMs: 10_000,
    });
    expect(states.get(id)).toBe('dead_lettered');
    const r = await row(id);
    expect(r).toMatchObject({
      state: 'dead_lettered',
      dead_letter_reason: 'terminal_error',
      attempt: 1,
      lease_owner: null,
      lease_expires_at: null,
    });
    expect(r.finished_at).toEqual(r.updated_at);
    expect(r.run_at).toEqual(runAtBefore);
    expect(r.errors).toHaveLength(1);
    expect(r.last_error).toMatchObject({ kind: 'terminal', name: 'TerminalError' });
  });

  it('budget spent: the last transient failure dead-letters with attempts_exhausted', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue, maxAttempts: 2 });
    const [first] = await claim(queue, 1);
    expect(
      (
        await ex.jobFailMany({
          items: [{ id, token: first!.token, error: attemptError(1, first!.token), terminal: false }],
          backoffBaseMs: 1,
          backoffCapMs: 1,
        })
      ).get(id),
    ).toBe('pending');
    await db.query(`UPDATE baton.jobs SET run_at = now() WHERE id = $1`, [id]);
    const [second] = await claim(queue, 1);
    expect(second!.attempt).toBe(2);
    expect(
      (
        await ex.jobFailMany({
          items: [{ id, token: second!.token, error: attemptError(2, second!.token), terminal: false }],
          backoffBaseMs: 1,
          backoffCapMs: 1,
        })
      ).get(id),
    ).toBe('dead_lettered');
    const r = await row(id);
    expect(r).toMatchObject({ state: 'dead_lettered', dead_letter_reason: 'attempts_exhausted', attempt: 2 });
    expect(r.errors.map((e: { attempt: number }) => e.attempt)).toEqual([1, 2]);
  });

  it('writes a batch of mixed outcomes in one call, each fenced by its own token', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 3, { queue, maxAttempts: 3 });
    const jobs = await claim(queue, 3);
    const t = new Map(jobs.map((j) => [j.id, j.token]));
    const states = await ex.jobFailMany({
      items: [
        { id: ids[0]!, token: t.get(ids[0]!)!, error: attemptError(1, t.get(ids[0]!)!), terminal: false },
        { id: ids[1]!, token: t.get(ids[1]!)!, error: attemptError(1, t.get(ids[1]!)!), terminal: true },
        { id: ids[2]!, token: '1', error: attemptError(1, '1'), terminal: true }, // stale
      ],
      backoffBaseMs: 1,
      backoffCapMs: 1,
    });
    expect(Object.fromEntries(states)).toEqual({ [ids[0]!]: 'pending', [ids[1]!]: 'dead_lettered' });
    expect((await row(ids[2]!)).state).toBe('running');
  });
});

describe('jobReleaseMany', () => {
  it('with refund: back to pending, attempt decremented, lease cleared', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue });
    const [job] = await claim(queue, 1, { intoRunning: false });
    expect((await row(id)).attempt).toBe(1);
    expect([...(await ex.jobReleaseMany({ leases: [{ id, token: job!.token }], refundAttempt: true }))]).toEqual([id]);
    expect(await row(id)).toMatchObject({
      state: 'pending',
      attempt: 0,
      lease_owner: null,
      lease_expires_at: null,
      started_at: null,
      lease_token: job!.token,
    });
    // Claimable again at once.
    expect((await claim(queue, 1)).map((j) => j.id)).toEqual([id]);
  });

  it('without refund: the attempt stays spent', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue });
    const [job] = await claim(queue, 1);
    await ex.jobReleaseMany({ leases: [{ id, token: job!.token }], refundAttempt: false });
    expect(await row(id)).toMatchObject({ state: 'pending', attempt: 1, lease_owner: null });
  });

  it('without refund on a spent budget: dead-lettered, never claimed beyond max_attempts', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue, state: 'running', attempt: 2, maxAttempts: 2 });
    const token = (await row(id)).lease_token as string;
    expect([...(await ex.jobReleaseMany({ leases: [{ id, token }], refundAttempt: false }))]).toEqual([id]);
    const r = await row(id);
    expect(r).toMatchObject({
      state: 'dead_lettered',
      dead_letter_reason: 'attempts_exhausted',
      attempt: 2,
      lease_owner: null,
      lease_expires_at: null,
    });
    expect(r.finished_at).toEqual(r.updated_at);
    expect(await claim(queue, 1)).toEqual([]);
    // With the refund the spent attempt is given back, so the job stays runnable.
    const other = await insertJob(db.pool, { queue, state: 'leased', attempt: 2, maxAttempts: 2 });
    const t2 = (await row(other)).lease_token as string;
    await ex.jobReleaseMany({ leases: [{ id: other, token: t2 }], refundAttempt: true });
    expect(await row(other)).toMatchObject({ state: 'pending', attempt: 1, dead_letter_reason: null, finished_at: null });
  });
});
