// Conformance of the PostgreSQL Executor, method by method, against a real
// database: every assertion reads the jobs/workers rows back (state, attempt,
// token, lease owner/expiry, timestamps). Times are compared on the database
// clock (e.g. run_at - updated_at of the same statement), never the test's.
// Each test works in its own queue(s), so tests sharing the file's database
// never claim each other's rows.

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Baton } from '../../src/core/baton.ts';
import { BatonError } from '../../src/core/errors.ts';
import { RUN_AT_MAX, RUN_AT_MIN } from '../../src/core/job-spec.ts';
import type { JobSpec, LeasedJob } from '../../src/core/job.ts';
import { channelFor } from '../../src/core/notifier.ts';
import { createBaton, lockNamespaceFor } from '../../src/create-baton.ts';
import type { AttemptErrorInput, Lease, NewJob } from '../../src/db/executor.ts';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { quoteSchema } from '../../src/db/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob, insertJobs, jobRow } from '../helpers/factory.ts';
import { deferred, waitFor } from '../helpers/wait.ts';

const db = useTestDatabase();
let ex: PgExecutor;
let baton: Baton;

beforeAll(() => {
  ex = new PgExecutor(db.pool, quoteSchema(db.schema));
  // A producer-only engine (no queues): enqueue and admin over the file's pool.
  baton = createBaton({ pool: db.pool });
});
afterAll(async () => {
  await baton?.stop();
});

let seq = 0;
/** A queue name no other test uses. */
const fresh = (prefix = 'q') => `${prefix}-${++seq}`;
const LEASE = 30_000;

function newJob(over: Partial<NewJob> = {}): NewJob {
  return {
    tenantId: 'default',
    queue: 'default',
    jobType: 'test.job',
    payload: {},
    priority: 0,
    runAt: null,
    delayMs: 0,
    maxAttempts: 5,
    idempotencyKey: null,
    ...over,
  };
}

function claim(queue: string, limit: number, opts: { owner?: string; intoRunning?: boolean; leaseMs?: number } = {}) {
  return ex.jobClaim({ queue, limit, owner: opts.owner ?? 'w-a', intoRunning: opts.intoRunning ?? true, leaseMs: opts.leaseMs ?? LEASE });
}

const row = async (id: string) => (await jobRow(db.pool, id))!;
const ms = (a: Date, b: Date) => a.getTime() - b.getTime();

async function expireLeases(ids: string[]): Promise<void> {
  await db.query(`UPDATE baton.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ANY($1::bigint[])`, [ids]);
}

/** Reaps expired leases only (no fast reclaim); returns the reaped rows of `ids`. */
async function reapExpired(ids: string[]) {
  const reaped = await ex.jobReap({ limit: 10_000, graceMs: 60_000, fastReclaim: false });
  return reaped.filter((r) => ids.includes(r.id));
}

function attemptError(attempt: number, token: string, over: Partial<AttemptErrorInput> = {}): AttemptErrorInput {
  return { attempt, token, kind: 'transient', name: 'Error', message: `failed attempt ${attempt}`, stack: `Error: failed attempt ${attempt}\n    at handler`, ...over };
}

async function jobCount(): Promise<number> {
  return (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM baton.jobs')).rows[0]!.n;
}

async function expectBatonError(p: Promise<unknown> | (() => unknown), code: string): Promise<BatonError> {
  let err: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    err = e;
  }
  expect(err, `expected BatonError ${code}`).toBeInstanceOf(BatonError);
  expect((err as BatonError).code).toBe(code);
  return err as BatonError;
}

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
      const prevMax = tokens[i - 1]!.reduce((m, t) => (t > m ? t : m));
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

  it.each([true, false])('the claimed job is the row as read back, also the fields the claim leaves out (into running: %s)', async (intoRunning) => {
    const queue = fresh();
    const earlier = { attempt: 1, token: '3', kind: 'transient', name: 'Error', message: 'boom', at: '2026-01-01T00:00:00.000Z' };
    const fresher = await insertJob(db.pool, { queue, tenantId: 't-1', payload: { n: 1 }, priority: 2, idempotencyKey: queue });
    const retried = await insertJob(db.pool, { queue, attempt: 1, lastError: earlier, errors: [earlier], replayCount: 2, runAt: { inMs: -5_000 } });
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
      expect(strip(job)).toEqual(strip(stored));
    }
  });

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
    expect(job).toMatchObject({ id, queue, payload: { n: 7 }, state: 'running', attempt: 1, token: r.lease_token, leaseOwner: 'w-objects' });
    expect(job!.createdAt).toEqual(r.created_at);
  });
});

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
      (await ex.jobFailMany({ items: [{ ...stale, error: attemptError(1, stale.token), terminal: true }], backoffBaseMs: 1, backoffCapMs: 1 })).size,
    ).toBe(0);
    expect(await row(id)).toEqual(before);
    expect((await ex.jobHeartbeatMany({ leases: [stale], leaseMs: 600_000 })).size).toBe(0);
    expect(await row(id)).toEqual(before);
    expect((await ex.jobMarkRunningMany({ leases: [stale] })).size).toBe(0);
    expect(await row(id)).toEqual(before);
    expect((await ex.jobReleaseMany({ leases: [stale], refundAttempt: true })).size).toBe(0);
    expect(await row(id)).toEqual(before);

    // The current owner proceeds: start, heartbeat (expiry = now + lease), complete.
    expect([...(await ex.jobMarkRunningMany({ leases: [current] }))]).toEqual([id]);
    expect([...(await ex.jobHeartbeatMany({ leases: [current], leaseMs: 12_345 }))]).toEqual([id]);
    const hb = await row(id);
    expect(ms(hb.lease_expires_at, hb.updated_at)).toBe(12_345);
    expect([...(await ex.jobCompleteMany({ items: [{ ...current, result: { by: 'new' } }] }))]).toEqual([id]);
    const done = await row(id);
    expect(done).toMatchObject({ state: 'succeeded', result: { by: 'new' }, lease_owner: null, lease_expires_at: null, lease_token: current.token });
    expect(done.finished_at).toEqual(done.updated_at);

    // After the outcome, even the current token writes nothing more.
    expect((await ex.jobCompleteMany({ items: [{ ...current, result: 'again' }] })).size).toBe(0);
    expect((await ex.jobHeartbeatMany({ leases: [current], leaseMs: 1_000 })).size).toBe(0);
    expect(await row(id)).toEqual(done);
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
    expect((await ex.jobFailMany({ items: [{ ...lease, error: attemptError(1, a!.token), terminal: false }], backoffBaseMs: 1, backoffCapMs: 1 })).size).toBe(0);
    expect((await ex.jobHeartbeatMany({ leases: [lease], leaseMs: 1_000 })).size).toBe(0);
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
    expect(stored.rows.map((r) => [r.sql_null, r.result])).toEqual([[true, null], [false, { n: 1 }], [true, null], [false, 'two']]);
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
    expect([...(await ex.jobHeartbeatMany({ leases, leaseMs: 60_000 }))]).toEqual([id]);
    expect([...(await ex.jobCompleteMany({ items: leases.map((l) => ({ ...l, result: null })) }))]).toEqual([id]);
    expect(await row(id!)).toMatchObject({ state: 'succeeded', lease_token: current!.token });
    expect(await row(other!)).toMatchObject({ state: 'pending' });
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
      expect(r).toMatchObject({ state: 'pending', attempt: 4, lease_owner: null, lease_expires_at: null, finished_at: null, dead_letter_reason: null });
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
    await ex.jobFailMany({ items: [{ id: capped, token, error: attemptError(9, token), terminal: false }], backoffBaseMs: 1_000, backoffCapMs: 50 });
    const c = await row(capped);
    expect(ms(c.run_at, c.updated_at)).toBeLessThanOrEqual(50);
  });

  it('keeps each attempt\'s error (attempt, kind, message, stack, database time) in a growing history', async () => {
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
    await ex.jobFailMany({ items: [{ id, token, error: attemptError(1, token, { message: 'newest' }), terminal: false }], backoffBaseMs: 1, backoffCapMs: 1 });
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
    expect(r).toMatchObject({ state: 'dead_lettered', dead_letter_reason: 'terminal_error', attempt: 1, lease_owner: null, lease_expires_at: null });
    expect(r.finished_at).toEqual(r.updated_at);
    expect(r.run_at).toEqual(runAtBefore);
    expect(r.errors).toHaveLength(1);
    expect(r.last_error).toMatchObject({ kind: 'terminal', name: 'TerminalError' });
  });

  it('budget spent: the last transient failure dead-letters with attempts_exhausted', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue, maxAttempts: 2 });
    const [first] = await claim(queue, 1);
    expect((await ex.jobFailMany({ items: [{ id, token: first!.token, error: attemptError(1, first!.token), terminal: false }], backoffBaseMs: 1, backoffCapMs: 1 })).get(id)).toBe('pending');
    await db.query(`UPDATE baton.jobs SET run_at = now() WHERE id = $1`, [id]);
    const [second] = await claim(queue, 1);
    expect(second!.attempt).toBe(2);
    expect((await ex.jobFailMany({ items: [{ id, token: second!.token, error: attemptError(2, second!.token), terminal: false }], backoffBaseMs: 1, backoffCapMs: 1 })).get(id)).toBe('dead_lettered');
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
    expect(await row(id)).toMatchObject({ state: 'pending', attempt: 0, lease_owner: null, lease_expires_at: null, started_at: null, lease_token: job!.token });
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
    expect(r).toMatchObject({ state: 'dead_lettered', dead_letter_reason: 'attempts_exhausted', attempt: 2, lease_owner: null, lease_expires_at: null });
    expect(r.finished_at).toEqual(r.updated_at);
    expect(await claim(queue, 1)).toEqual([]);
    // With the refund the spent attempt is given back, so the job stays runnable.
    const other = await insertJob(db.pool, { queue, state: 'leased', attempt: 2, maxAttempts: 2 });
    const t2 = (await row(other)).lease_token as string;
    await ex.jobReleaseMany({ leases: [{ id: other, token: t2 }], refundAttempt: true });
    expect(await row(other)).toMatchObject({ state: 'pending', attempt: 1, dead_letter_reason: null, finished_at: null });
  });
});

describe('jobReap', () => {
  it('returns an expired lease to pending, keeping the attempt and recording lease_expired', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue, maxAttempts: 3 });
    const live = await insertJob(db.pool, { queue: fresh(), state: 'running' }); // lease 30 s ahead
    const [job] = await claim(queue, 1, { owner: 'w-dead' });
    await expireLeases([id]);
    const liveBefore = await row(live);

    const reaped = await ex.jobReap({ limit: 100, graceMs: 60_000, fastReclaim: false });
    expect(reaped.filter((r) => r.id === id)).toEqual([{ id, state: 'pending', queue, expired: true }]);
    expect(reaped.some((r) => r.id === live)).toBe(false);
    expect(await row(live)).toEqual(liveBefore);

    const r = await row(id);
    expect(r).toMatchObject({ state: 'pending', attempt: 1, lease_owner: null, lease_expires_at: null, started_at: null, dead_letter_reason: null });
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ kind: 'lease_expired', attempt: 1, token: job!.token, worker: 'w-dead' });
    expect(r.last_error).toEqual(r.errors[0]);
  });

  it('dead-letters an expired lease whose budget is spent', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue, state: 'running', attempt: 2, maxAttempts: 2, leaseExpiresAt: { inMs: -1 } });
    expect(await reapExpired([id])).toEqual([{ id, state: 'dead_lettered', queue, expired: true }]);
    const r = await row(id);
    expect(r).toMatchObject({ state: 'dead_lettered', dead_letter_reason: 'attempts_exhausted', attempt: 2, lease_owner: null });
    expect(r.finished_at).toEqual(r.updated_at);
  });

  it('works in bounded batches', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 5, { queue, state: 'leased', leaseExpiresAt: { inMs: -1 } });
    const first = await ex.jobReap({ limit: 2, graceMs: 60_000, fastReclaim: false });
    expect(first).toHaveLength(2);
    const rest = await ex.jobReap({ limit: 100, graceMs: 60_000, fastReclaim: false });
    expect([...first, ...rest].map((r) => r.id).sort()).toEqual([...ids].sort());
  });
});

describe('fast reclaim', () => {
  const ns = lockNamespaceFor('baton');
  let nextKey = 900_000;

  async function workerWithJob(workerId: string): Promise<{ jobId: string; key: number }> {
    const key = ++nextKey;
    await db.query(`INSERT INTO baton.workers (id, lock_key, hostname, pid) VALUES ($1, $2, 'test-host', 1)`, [workerId, key]);
    // A lease far from expiry: only fast reclaim may take it.
    const jobId = await insertJob(db.pool, { queue: fresh(), state: 'running', leaseOwner: workerId, leaseExpiresAt: { inMs: 600_000 } });
    return { jobId, key };
  }
  const goneSince = async (id: string) => (await db.query(`SELECT gone_since FROM baton.workers WHERE id = $1`, [id])).rows[0].gone_since as Date | null;
  const reap = async (graceMs: number, fastReclaim = true) => ex.jobReap({ limit: 10_000, graceMs, fastReclaim });

  it('a worker whose presence lock nobody holds is marked gone, its leases reclaimed only after the grace', async () => {
    const { jobId } = await workerWithJob('w-gone');
    // A lock with the same key in another namespace does not count as presence.
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    try {
      await other.query('SELECT pg_advisory_lock($1::int, $2::int)', [ns === 1 ? 2 : ns - 1, nextKey]);
      await ex.workerSweep({ lockNamespace: ns });
    } finally {
      await other.end();
    }
    const since = await goneSince('w-gone');
    expect(since).toBeInstanceOf(Date);
    const before = await row(jobId);

    // Inside the grace, or with fast reclaim off: untouched.
    expect((await reap(60_000)).some((r) => r.id === jobId)).toBe(false);
    expect((await reap(0, false)).some((r) => r.id === jobId)).toBe(false);
    expect(await row(jobId)).toEqual(before);
    // A second sweep keeps the first time it was seen gone.
    await ex.workerSweep({ lockNamespace: ns });
    expect(await goneSince('w-gone')).toEqual(since);

    // Past the grace: reclaimed although the lease has not expired.
    const reaped = (await reap(0)).filter((r) => r.id === jobId);
    expect(reaped).toEqual([{ id: jobId, state: 'pending', queue: before.queue, expired: false }]);
    const r = await row(jobId);
    expect(r).toMatchObject({ state: 'pending', attempt: 1, lease_owner: null, lease_expires_at: null });
    expect(r.last_error).toMatchObject({ kind: 'worker_gone', worker: 'w-gone', token: before.lease_token });
  });

  it('a worker whose lock is held is not reclaimed; once its session is terminated it is', async () => {
    const { jobId, key } = await workerWithJob('w-held');
    const presence = new pg.Client({ connectionString: db.url, application_name: 'test-presence' });
    const ended = deferred();
    presence.on('error', () => undefined);
    presence.on('end', () => ended.resolve());
    await presence.connect();
    try {
      const got = await presence.query('SELECT pg_try_advisory_lock($1::int, $2::int) AS ok, pg_backend_pid() AS pid', [ns, key]);
      expect(got.rows[0].ok).toBe(true);
      const pid = got.rows[0].pid as number;

      await ex.workerSweep({ lockNamespace: ns });
      expect(await goneSince('w-held')).toBeNull();
      const before = await row(jobId);
      expect((await reap(0)).some((r) => r.id === jobId)).toBe(false);
      expect(await row(jobId)).toEqual(before);

      // kill the owner's session: PostgreSQL drops its session lock with it.
      await db.query('SELECT pg_terminate_backend($1)', [pid]);
      await ended.promise;
      await waitFor(
        async () => {
          await ex.workerSweep({ lockNamespace: ns });
          return (await goneSince('w-held')) !== null;
        },
        { message: 'the terminated worker to be swept as gone' },
      );
      const reaped = (await reap(0)).filter((r) => r.id === jobId);
      expect(reaped).toEqual([{ id: jobId, state: 'pending', queue: before.queue, expired: false }]);
      expect((await row(jobId)).last_error).toMatchObject({ kind: 'worker_gone' });
    } finally {
      await presence.end().catch(() => undefined);
    }
  });

  it('spares a lease claimed or renewed after its owner was seen gone; expiry still takes it', async () => {
    const { jobId: renewed } = await workerWithJob('w-late');
    await ex.workerSweep({ lockNamespace: ns });
    expect(await goneSince('w-late')).not.toBeNull();
    // Seen gone a minute ago; two leases last written before that.
    await db.query(`UPDATE baton.workers SET gone_since = now() - interval '1 minute' WHERE id = 'w-late'`);
    const twoMinutesAgo = { inMs: -120_000 };
    await db.query(`UPDATE baton.jobs SET updated_at = now() - interval '2 minutes' WHERE id = $1`, [renewed]);
    const early = await insertJob(db.pool, { queue: fresh(), state: 'running', leaseOwner: 'w-late', leaseExpiresAt: { inMs: 600_000 }, updatedAt: twoMinutesAgo });
    // Since then the owner renewed one of them and claimed a new job: it was alive after all.
    const token = (await row(renewed)).lease_token as string;
    expect(await ex.jobHeartbeatMany({ leases: [{ id: renewed, token }], leaseMs: 600_000 })).toEqual(new Set([renewed]));
    const queue = fresh();
    await insertJob(db.pool, { queue });
    const [claimed] = await ex.jobClaim({ queue, limit: 1, owner: 'w-late', leaseMs: 600_000, intoRunning: true });

    const reaped = await reap(0);
    expect(reaped.map((r) => [r.id, r.expired])).toEqual([[early, false]]);
    expect((await row(claimed!.id)).state).toBe('running');
    expect((await row(renewed)).state).toBe('running');

    // Left to their leases: once expired, the reaper takes them as it takes any other.
    await db.query(`UPDATE baton.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ANY($1::bigint[])`, [[claimed!.id, renewed]]);
    const expired = await reap(0);
    expect(expired.map((r) => [r.id, r.expired]).sort()).toEqual([[claimed!.id, true], [renewed, true]].sort());
  });

  it('one bound covers expired leases and a gone worker\'s leases together, the expired first', async () => {
    await reap(0); // nothing left over from earlier tests to share the bound with
    const { jobId } = await workerWithJob('w-bound');
    const owned = [jobId, ...(await insertJobs(db.pool, 2, { queue: fresh(), state: 'running', leaseOwner: 'w-bound', leaseExpiresAt: { inMs: 600_000 } }))];
    const expired = await insertJobs(db.pool, 3, { queue: fresh(), state: 'running', leaseExpiresAt: { inMs: -1 } });
    await ex.workerSweep({ lockNamespace: ns });
    expect(await goneSince('w-bound')).not.toBeNull();

    const first = await ex.jobReap({ limit: 4, graceMs: 0, fastReclaim: true });
    expect(first).toHaveLength(4);
    expect(first.filter((r) => r.expired).map((r) => r.id).sort()).toEqual([...expired].sort());
    const rest = await ex.jobReap({ limit: 4, graceMs: 0, fastReclaim: true });
    expect([...first, ...rest].filter((r) => !r.expired).map((r) => r.id).sort()).toEqual([...owned].sort());
  });

  it('a worker seen gone that holds its lock again is cleared by the next sweep', async () => {
    const { key } = await workerWithJob('w-back');
    await ex.workerSweep({ lockNamespace: ns });
    expect(await goneSince('w-back')).not.toBeNull();
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await c.query('SELECT pg_advisory_lock($1::int, $2::int)', [ns, key]);
      await ex.workerSweep({ lockNamespace: ns });
      expect(await goneSince('w-back')).toBeNull();
    } finally {
      await c.end();
    }
  });
});

describe('enqueue', () => {
  it('resolves delayMs on the database clock and stores the spec', async () => {
    const queue = fresh();
    const { job, created } = await baton.enqueue({ jobType: 'mail.send', queue, payload: { to: 'a@b' }, priority: 3, delayMs: 45_000, maxAttempts: 7 });
    expect(created).toBe(true);
    const r = await row(job.id);
    expect(r).toMatchObject({ state: 'pending', queue, job_type: 'mail.send', payload: { to: 'a@b' }, priority: 3, max_attempts: 7, attempt: 0 });
    expect(ms(r.run_at, r.created_at)).toBe(45_000);
    expect(await claim(queue, 1)).toEqual([]);
  });

  it('idempotency key per tenant: same tenant -> one job, other tenant -> its own job', async () => {
    const spec: JobSpec = { jobType: 'k.test', queue: fresh(), idempotencyKey: 'order-1', payload: { n: 1 } };
    const first = await baton.enqueue(spec);
    const dup = await baton.enqueue({ ...spec, payload: { n: 2 } });
    expect(first.created).toBe(true);
    expect(dup).toMatchObject({ created: false, job: { id: first.job.id, payload: { n: 1 } } });
    const other = await baton.enqueue({ ...spec, tenantId: 'acme' });
    expect(other.created).toBe(true);
    expect(other.job.id).not.toBe(first.job.id);
    const rows = await db.query(`SELECT tenant_id FROM baton.jobs WHERE idempotency_key = 'order-1' ORDER BY tenant_id`);
    expect(rows.rows.map((r) => r.tenant_id)).toEqual(['acme', 'default']);
  });

  it('a key repeated inside one batch creates one job; results keep input order', async () => {
    const queue = fresh();
    const existing = await baton.enqueue({ jobType: 'b.test', queue, idempotencyKey: 'pre' });
    const res = await baton.enqueueMany([
      { jobType: 'b.test', queue, payload: 'u1' },
      { jobType: 'b.test', queue, idempotencyKey: 'k', payload: 'k-first' },
      { jobType: 'b.test', queue, idempotencyKey: 'pre', payload: 'ignored' },
      { jobType: 'b.test', queue, idempotencyKey: 'k', payload: 'k-second' },
      { jobType: 'b.test', queue, payload: 'u2' },
    ]);
    expect(res.map((r) => r.created)).toEqual([true, true, false, false, true]);
    expect(res.map((r) => r.job.payload)).toEqual(['u1', 'k-first', null, 'k-first', 'u2']);
    expect(res[2]!.job.id).toBe(existing.job.id);
    expect(res[3]!.job.id).toBe(res[1]!.job.id);
    const n = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1`, [queue]);
    expect(n.rows[0].n).toBe(4);
  });

  it('a large mixed batch maps every result to its own spec', async () => {
    const queue = fresh();
    const specs: JobSpec[] = Array.from({ length: 600 }, (_, i) => ({
      jobType: 'big.batch',
      queue,
      payload: { i },
      ...(i % 7 === 0 ? { idempotencyKey: `big-${i % 21}` } : {}),
    }));
    const res = await baton.enqueueMany(specs);
    expect(res).toHaveLength(600);
    res.forEach((r, i) => {
      const key = specs[i]!.idempotencyKey;
      // A repeated key returns the job of its first occurrence.
      const first = key === undefined ? i : specs.findIndex((s) => s.idempotencyKey === key);
      expect(r.job.payload).toEqual({ i: first });
      expect(r.created).toBe(first === i);
    });
    const n = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1`, [queue]);
    expect(n.rows[0].n).toBe(res.filter((r) => r.created).length);
  });

  it('20 concurrent duplicate enqueues on separate connections create exactly one job', async () => {
    const producer = createBaton({ connectionString: db.url, poolSize: 20 });
    try {
      for (let round = 0; round < 3; round++) {
        const key = `concurrent-${round}`;
        const spec: JobSpec = { jobType: 'c.test', queue: fresh(), idempotencyKey: key, tenantId: 'dup' };
        const results = await Promise.all(Array.from({ length: 20 }, () => producer.enqueue(spec)));
        expect(new Set(results.map((r) => r.job.id)).size).toBe(1);
        expect(results.filter((r) => r.created)).toHaveLength(1);
        const n = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE tenant_id = 'dup' AND idempotency_key = $1`, [key]);
        expect(n.rows[0].n).toBe(1);
      }
      // The duplicates really raced on separate sessions.
      const sessions = await db.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'baton'`,
      );
      expect(sessions.rows[0].n).toBeGreaterThanOrEqual(10);
    } finally {
      await producer.stop();
    }
  });
});

describe('NOTIFY carried by the insert statement', () => {
  it('arrives with the commit of a statement that inserted, and not at all when every row was a duplicate', async () => {
    const queue = fresh();
    const channel = channelFor('baton', queue);
    const listener = new pg.Client({ connectionString: db.url });
    const heard: string[] = [];
    await listener.connect();
    try {
      listener.on('notification', (n) => heard.push(n.channel));
      await listener.query(`LISTEN ${channel}`);
      const [first] = await ex.jobInsertMany({ jobs: [newJob({ queue, idempotencyKey: 'n-1' })], notify: [channel] });
      expect(first!.created).toBe(true);
      await waitFor(() => heard.length === 1, { message: 'the NOTIFY of the first insert' });
      const [dup] = await ex.jobInsertMany({ jobs: [newJob({ queue, idempotencyKey: 'n-1' })], notify: [channel] });
      expect(dup).toMatchObject({ created: false, job: { id: first!.job.id } });
      await ex.jobInsertMany({ jobs: [newJob({ queue })], notify: [channel] });
      // Notifications arrive in commit order: once the third statement's is here, a NOTIFY from
      // the duplicate-only statement would have arrived before it.
      await waitFor(() => heard.length >= 2, { message: 'the NOTIFY of the third insert' });
      expect(heard).toEqual([channel, channel]);
      // Without channels, the insert sends nothing.
      await ex.jobInsertMany({ jobs: [newJob({ queue })] });
      await ex.jobInsertMany({ jobs: [newJob({ queue })], notify: [channel] });
      await waitFor(() => heard.length >= 3, { message: 'the NOTIFY of the fifth insert' });
      expect(heard).toHaveLength(3);
    } finally {
      await listener.end();
    }
  });
});

describe('NOTIFY written behind an autocommit insert (notifyAfter)', () => {
  // One connection, so every statement below shares it: a pipeline left out of step by a
  // failed statement would hand the next insert the wrong reply.
  describe.each([true, false])('pipeline %s', (pipeline) => {
    it('is heard only once the row is visible, and a failed insert leaves the connection in step', async () => {
      const pool = new pg.Pool({ connectionString: db.url, max: 1, pipeline });
      // pool.end() resolves before its socket closes; the file's DROP ... WITH (FORCE) may reach it.
      pool.on('error', () => undefined);
      const pex = new PgExecutor(pool, quoteSchema(db.schema));
      const listener = new pg.Client({ connectionString: db.url });
      const [bad, good] = [fresh('bad'), fresh('good')].map((q) => channelFor('baton', q)) as [string, string];
      // At each notification, whether the job it announces is visible from another session.
      const heard: Array<{ channel: string; visible: Promise<number> }> = [];
      let expectQueue = '';
      const notifyErrors: unknown[] = [];
      const onError = (err: unknown) => notifyErrors.push(err);
      await listener.connect();
      try {
        listener.on('notification', (n) =>
          heard.push({
            channel: n.channel,
            visible: db.pool.query('SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1', [expectQueue]).then((r) => r.rows[0].n),
          }),
        );
        await listener.query(`LISTEN ${bad}`);
        await listener.query(`LISTEN ${good}`);

        const before = await jobCount();
        await expectBatonError(
          pex.jobInsertMany({ jobs: [newJob({ payload: { s: 'a\u0000b' } })], notifyAfter: { channels: [bad], onError } }),
          'INVALID_ARGUMENT',
        );
        expect(await jobCount()).toBe(before);

        for (let i = 0; i < 3; i++) {
          expectQueue = fresh();
          const n = heard.filter((h) => h.channel === good).length;
          const [r] = await pex.jobInsertMany({ jobs: [newJob({ queue: expectQueue })], notifyAfter: { channels: [good], onError } });
          // The reply is this insert's own row, not a neighbour's in the pipeline.
          expect(r).toMatchObject({ created: true, job: { queue: expectQueue } });
          await waitFor(() => heard.filter((h) => h.channel === good).length === n + 1, { message: `the NOTIFY of insert ${i}` });
          expect(await heard.filter((h) => h.channel === good)[n]!.visible).toBe(1);
        }
        expect(notifyErrors).toEqual([]);
      } finally {
        await listener.end();
        await pool.end();
      }
    });

    it('answers after its NOTIFY: a failed NOTIFY is reported by then, keeps the job, and spares the next enqueue', async () => {
      const pool = new pg.Pool({ connectionString: db.url, max: 1, pipeline });
      pool.on('error', () => undefined);
      const pex = new PgExecutor(pool, quoteSchema(db.schema));
      const notifyErrors: unknown[] = [];
      const onError = (err: unknown) => notifyErrors.push(err);
      try {
        // PostgreSQL refuses channel names over 63 bytes, after the insert has committed.
        const queue = fresh();
        const [r] = await pex.jobInsertMany({ jobs: [newJob({ queue })], notifyAfter: { channels: ['c'.repeat(64)], onError } });
        expect(r).toMatchObject({ created: true, job: { queue } });
        expect(notifyErrors).toHaveLength(1);
        expect(await db.query('SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1', [queue])).toMatchObject({ rows: [{ n: 1 }] });
        const [next] = await pex.jobInsertMany({ jobs: [newJob({ queue })], notifyAfter: { channels: ['c'], onError } });
        expect(next!.created).toBe(true);
        expect(notifyErrors).toHaveLength(1);
      } finally {
        await pool.end();
      }
    });
  });
});

describe('a connection that dies under an autocommit enqueue', () => {
  it('fails that enqueue as DB_UNAVAILABLE and leaves the process and the pool working', async () => {
    const app = `baton-killed-${process.pid}`;
    const pool = new pg.Pool({ connectionString: db.url, max: 1, pipeline: true, application_name: app });
    pool.on('error', () => undefined);
    const pex = new PgExecutor(pool, quoteSchema(db.schema));
    const onError = () => undefined;
    const locker = await db.pool.connect();
    try {
      // Hold the insert behind a table lock, so its connection is checked out and busy when killed.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE baton.jobs IN EXCLUSIVE MODE');
      const enqueued = pex.jobInsertMany({ jobs: [newJob({ queue: fresh() })], notifyAfter: { channels: ['x'], onError } });
      // Handled from here on: the termination can reach this connection before the terminating
      // query answers, and a rejection nobody is listening for yet fails the whole run.
      const failed = expectBatonError(enqueued, 'DB_UNAVAILABLE');
      const pid = await waitFor(
        async () =>
          (await db.query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [app])).rows[0]
            ?.pid as number | undefined,
        { message: 'the insert waiting on the lock' },
      );
      await db.query('SELECT pg_terminate_backend($1)', [pid]);
      // Without an 'error' listener on the checked-out client this ends the test process.
      await failed;
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
    // The dead connection was not pooled again: the next enqueue gets a fresh one.
    const [r] = await pex.jobInsertMany({ jobs: [newJob({ queue: fresh() })], notifyAfter: { channels: ['x'], onError } });
    expect(r!.created).toBe(true);
    await pool.end();
  });
});

describe('transactional enqueue on the caller\'s client', () => {
  /** The caller's client, recording every statement text Baton sends on it. */
  async function callerClient() {
    const client = await db.pool.connect();
    const sent: string[] = [];
    const query = client.query.bind(client) as (...a: unknown[]) => unknown;
    const spy = (...args: unknown[]) => {
      const c = args[0];
      sent.push(typeof c === 'string' ? c : String((c as { text?: string }).text));
      return query(...args);
    };
    return { client, sent, baton: spy as unknown as pg.PoolClient['query'] };
  }
  const CONTROL = /^\s*(BEGIN|START|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE|ABORT|PREPARE)\b/i;

  it('ROLLBACK leaves no job, COMMIT makes it claimable; Baton never ends the transaction', async () => {
    const queue = fresh();
    const listener = new pg.Client({ connectionString: db.url });
    const heard: string[] = [];
    await listener.connect();
    listener.on('notification', (n) => heard.push(n.channel));
    await listener.query(`LISTEN ${channelFor('baton', queue)}`);
    const { client, sent, baton: spyQuery } = await callerClient();
    const onClient = { query: spyQuery } as unknown as pg.PoolClient;
    try {
      await client.query('BEGIN');
      const rolled = await baton.enqueue({ jobType: 'tx.test', queue, payload: 'rolled back' }, { client: onClient });
      // Still inside the caller's transaction, which has written.
      expect((await client.query('SELECT txid_current_if_assigned() AS x')).rows[0].x).not.toBeNull();
      expect(await jobRow(db.pool, rolled.job.id)).toBeUndefined(); // invisible to others before commit
      await client.query('ROLLBACK');
      expect(await jobRow(db.pool, rolled.job.id)).toBeUndefined();
      expect(await claim(queue, 10)).toEqual([]);

      await client.query('BEGIN');
      const kept = await baton.enqueue({ jobType: 'tx.test', queue, payload: 'committed' }, { client: onClient });
      expect((await client.query('SELECT txid_current_if_assigned() AS x')).rows[0].x).not.toBeNull();
      expect(await claim(queue, 10)).toEqual([]);
      await client.query('COMMIT');
      expect((await claim(queue, 10)).map((j) => j.id)).toEqual([kept.job.id]);

      expect(sent.length).toBeGreaterThan(0);
      expect(sent.filter((s) => CONTROL.test(s))).toEqual([]);
      // The wake-up NOTIFY travelled with the transaction: only the committed one arrives.
      await waitFor(() => heard.length > 0, { message: 'the committed enqueue\'s NOTIFY' });
      expect(heard).toEqual([channelFor('baton', queue)]);
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
      await listener.end();
    }
  });

  it('a batch on the caller\'s client rolls back as a whole', async () => {
    const queue = fresh();
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      const res = await baton.enqueueMany(
        [{ jobType: 'tx.batch', queue }, { jobType: 'tx.batch', queue, idempotencyKey: 'tx-k' }],
        { client },
      );
      expect(res.every((r) => r.created)).toBe(true);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    const n = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1`, [queue]);
    expect(n.rows[0].n).toBe(0);
    // The rolled-back key is free again.
    expect((await baton.enqueue({ jobType: 'tx.batch', queue, idempotencyKey: 'tx-k' })).created).toBe(true);
  });
});

describe('admin', () => {
  it('getJob: unknown id -> JOB_NOT_FOUND, malformed id -> INVALID_ARGUMENT', async () => {
    await expectBatonError(baton.admin.getJob('999999999'), 'JOB_NOT_FOUND');
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999']) await expectBatonError(baton.admin.getJob(bad), 'INVALID_ARGUMENT');
    const id = await insertJob(db.pool, { queue: fresh() });
    expect((await baton.admin.getJob(id)).id).toBe(id);
  });

  it('replay: conflict unless terminal; resets the attempt budget and counts replays', async () => {
    const queue = fresh();
    for (const state of ['pending', 'leased', 'running'] as const) {
      const id = await insertJob(db.pool, { queue, state });
      const before = await row(id);
      const err = await expectBatonError(baton.admin.replay(id), 'JOB_STATE_CONFLICT');
      expect(err.details).toMatchObject({ id, state });
      expect(await row(id)).toEqual(before);
    }
    await expectBatonError(baton.admin.replay('999999999'), 'JOB_NOT_FOUND');

    const dead = await insertJob(db.pool, { queue, state: 'dead_lettered', attempt: 5, maxAttempts: 5, replayCount: 2, errors: [{ attempt: 5 }] });
    const job = await baton.admin.replay(dead);
    expect(job).toMatchObject({ id: dead, state: 'pending', attempt: 0, replayCount: 3 });
    const r = await row(dead);
    expect(r).toMatchObject({ state: 'pending', attempt: 0, replay_count: 3, dead_letter_reason: null, finished_at: null, started_at: null, errors: [{ attempt: 5 }] });
    expect(r.run_at).toEqual(r.updated_at);
    await expectBatonError(baton.admin.replay(dead), 'JOB_STATE_CONFLICT'); // now pending

    for (const state of ['succeeded', 'cancelled'] as const) {
      const id = await insertJob(db.pool, { queue, state, result: state === 'succeeded' ? { ok: 1 } : undefined });
      expect(await baton.admin.replay(id)).toMatchObject({ state: 'pending', replayCount: 1 });
      expect(await row(id)).toMatchObject({ result: null, finished_at: null });
    }
  });

  it('cancel: only pending jobs', async () => {
    const queue = fresh();
    const id = await insertJob(db.pool, { queue });
    expect(await baton.admin.cancel(id)).toMatchObject({ id, state: 'cancelled' });
    const r = await row(id);
    expect(r.state).toBe('cancelled');
    expect(r.finished_at).toEqual(r.updated_at);
    await expectBatonError(baton.admin.cancel(id), 'JOB_STATE_CONFLICT');
    for (const state of ['leased', 'running', 'succeeded', 'dead_lettered'] as const) {
      const other = await insertJob(db.pool, { queue, state });
      const before = await row(other);
      await expectBatonError(baton.admin.cancel(other), 'JOB_STATE_CONFLICT');
      expect(await row(other)).toEqual(before);
    }
    await expectBatonError(baton.admin.cancel('999999999'), 'JOB_NOT_FOUND');
    // A cancelled job is never claimed.
    expect(await claim(queue, 10)).toEqual([]);
  });

  it('replayDeadLetters: capped page, oldest first, filtered by queue', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 5, { queue, state: 'dead_lettered', attempt: 3, maxAttempts: 3 });
    const elsewhere = await insertJob(db.pool, { queue: fresh(), state: 'dead_lettered' });
    const page = await baton.admin.replayDeadLetters({ limit: 2, queue });
    expect(page.map((j) => j.id)).toEqual(ids.slice(0, 2));
    expect(page.every((j) => j.state === 'pending' && j.attempt === 0 && j.replayCount === 1)).toBe(true);
    const left = await db.query(`SELECT id::text FROM baton.jobs WHERE queue = $1 AND state = 'dead_lettered' ORDER BY id`, [queue]);
    expect(left.rows.map((r) => r.id)).toEqual(ids.slice(2));
    expect((await row(elsewhere)).state).toBe('dead_lettered');
    for (const limit of [0, 1_001, 2.5]) await expectBatonError(baton.admin.replayDeadLetters({ limit, queue }), 'INVALID_ARGUMENT');
  });

  it('listJobs: filters, paging, newest first, and validation', async () => {
    const queue = fresh();
    const ids = await insertJobs(db.pool, 5, (i) => ({ queue, tenantId: i < 3 ? 't-list' : 't-other', jobType: i % 2 ? 'odd' : 'even' }));
    await insertJob(db.pool, { queue, state: 'succeeded', tenantId: 't-list' });

    const all = await baton.admin.listJobs({ queue, state: 'pending' });
    expect(all).toMatchObject({ total: 5, limit: 50, offset: 0 });
    expect(all.jobs.map((j) => j.id)).toEqual([...ids].reverse());

    const p1 = await baton.admin.listJobs({ queue, state: 'pending', limit: 2 });
    const p2 = await baton.admin.listJobs({ queue, state: 'pending', limit: 2, offset: 2 });
    expect([...p1.jobs, ...p2.jobs].map((j) => j.id)).toEqual([ids[4], ids[3], ids[2], ids[1]]);
    expect(p2.total).toBe(5);

    const tenant = await baton.admin.listJobs({ queue, tenantId: 't-list', state: 'pending' });
    expect(tenant.jobs.map((j) => j.id)).toEqual([ids[2], ids[1], ids[0]]);
    const odd = await baton.admin.listJobs({ queue, jobType: 'odd' });
    expect(odd.jobs.map((j) => j.id)).toEqual([ids[3], ids[1]]);
    expect((await baton.admin.listJobs({ queue, state: 'succeeded' })).total).toBe(1);

    for (const bad of [{ state: 'bogus' }, { limit: 0 }, { limit: 501 }, { limit: 1.5 }, { offset: -1 }]) {
      await expectBatonError(baton.admin.listJobs(bad as never), 'INVALID_ARGUMENT');
    }
  });

  it('queueDepth and queues: counts by state, zeros included', async () => {
    const queue = fresh();
    await insertJobs(db.pool, 2, { queue });
    await insertJob(db.pool, { queue, state: 'running' });
    await insertJob(db.pool, { queue, state: 'dead_lettered' });
    const depth = await baton.admin.queueDepth(queue);
    expect(depth).toEqual({ pending: 2, leased: 0, running: 1, succeeded: 0, dead_lettered: 1, cancelled: 0 });
    expect(await baton.admin.queueDepth(fresh())).toEqual({ pending: 0, leased: 0, running: 0, succeeded: 0, dead_lettered: 0, cancelled: 0 });
    const queues = await baton.admin.queues();
    expect(queues.find((q) => q.queue === queue)?.counts).toEqual(depth);
  });
});

describe('bad input', () => {
  it.each<[string, JobSpec]>([
    ['NUL in payload string', { jobType: 'bad.nul', payload: { s: 'a\u0000b' } }],
    ['NUL in payload key', { jobType: 'bad.nul', payload: { ['k\u0000']: 1 } }],
    ['NUL after a literal backslash', { jobType: 'bad.nul', payload: ['\\\u0000'] }],
    ['NUL in jobType', { jobType: 'bad\u0000nul' }],
    ['NUL in idempotencyKey', { jobType: 'bad.nul', idempotencyKey: 'k\u0000' }],
    ['NUL in tenantId', { jobType: 'bad.nul', tenantId: 't\u0000' }],
    ['queue with a space', { jobType: 'bad.name', queue: 'has space' }],
    ['empty jobType', { jobType: '' }],
    ['129-char jobType', { jobType: 'x'.repeat(129) }],
    ['queue "/"', { jobType: 'bad.name', queue: '/' }],
    ['queue with a doubled slash', { jobType: 'bad.name', queue: 'a//b' }],
    ['jobType with a leading slash', { jobType: '/bad.name' }],
    ['tenantId with a trailing slash', { jobType: 'bad.name', tenantId: 't/' }],
    ['runAt and delayMs together', { jobType: 'bad.time', runAt: new Date(), delayMs: 10 }],
    ['invalid runAt', { jobType: 'bad.time', runAt: new Date(Number.NaN) }],
    ['negative delayMs', { jobType: 'bad.time', delayMs: -1 }],
    ['maxAttempts 0', { jobType: 'bad.attempts', maxAttempts: 0 }],
    ['fractional priority', { jobType: 'bad.prio', priority: 1.5 }],
    ['unknown field', { jobType: 'bad.field', queueName: 'x' } as unknown as JobSpec],
  ])('%s -> INVALID_ARGUMENT, no row written', async (_what, spec) => {
    const before = await jobCount();
    await expectBatonError(baton.enqueue(spec), 'INVALID_ARGUMENT');
    expect(await jobCount()).toBe(before);
  });

  it('a runAt outside years 0001..9999 (UTC) is refused before any SQL, naming runAt; the bounds themselves are stored', async () => {
    const before = await jobCount();
    // Valid-looking text whose offset carries it past a bound.
    for (const text of ['9999-12-31T23:00:00-01:00', '0001-01-01T00:30:00+01:00']) {
      const runAt = new Date(text);
      const one = await expectBatonError(baton.enqueue({ jobType: 'bad.time', runAt }), 'INVALID_ARGUMENT');
      expect(one.message).toMatch(/^invalid job: runAt: must be from 0001-01-01T00:00:00\.000Z to 9999-12-31T23:59:59\.999Z/);
      const many = await expectBatonError(baton.enqueueMany([{ jobType: 'ok.one' }, { jobType: 'bad.time', runAt }]), 'INVALID_ARGUMENT');
      expect(many.message).toContain('jobs[1].runAt: must be from');
    }
    expect(await jobCount()).toBe(before);
    for (const iso of [RUN_AT_MIN, RUN_AT_MAX]) {
      const { job } = await baton.enqueue({ jobType: 'ok.bound', runAt: new Date(iso) });
      expect((await row(job.id)).run_at.toISOString()).toBe(iso);
    }
  });

  it('accepts the six-character text \\u0000 (a backslash, no NUL) and stores it verbatim', async () => {
    const payload = { path: String.raw`C:\u0000dir`, nested: [String.raw`\\\u0000`] };
    const { job } = await baton.enqueue({ jobType: 'ok.backslash', payload, idempotencyKey: String.raw`key\u0000` });
    expect((await row(job.id)).payload).toEqual(payload);
  });

  it('one bad spec rejects the whole batch, naming its index', async () => {
    const before = await jobCount();
    const err = await expectBatonError(baton.enqueueMany([{ jobType: 'ok.one' }, { jobType: 'ok.two', maxAttempts: 0 }]), 'INVALID_ARGUMENT');
    expect(err.message).toContain('jobs[1].maxAttempts');
    expect(await jobCount()).toBe(before);
  });

  it('a payload that cannot be serialised is INVALID_ARGUMENT', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await expectBatonError(baton.enqueue({ jobType: 'bad.json', payload: cyclic }), 'INVALID_ARGUMENT');
    await expectBatonError(baton.enqueue({ jobType: 'bad.json', payload: 10n }), 'INVALID_ARGUMENT');
  });

  it('the executor itself turns NUL bytes the database rejects into INVALID_ARGUMENT, writing nothing', async () => {
    const before = await jobCount();
    for (const job of [newJob({ payload: { s: 'x\u0000' } }), newJob({ jobType: 'nul\u0000type' }), newJob({ idempotencyKey: 'k\u0000' })]) {
      await expectBatonError(ex.jobInsertMany({ jobs: [newJob(), job] }), 'INVALID_ARGUMENT');
    }
    expect(await jobCount()).toBe(before);
  });

  it('every data exception the database raises (class 22, here 22009) is INVALID_ARGUMENT, not INTERNAL', async () => {
    const before = await jobCount();
    // Year 10000 written the way Date#toISOString writes it: PostgreSQL reads "+010000" as a
    // time zone displacement and refuses it with 22009, a code no list of codes had named.
    const err = await expectBatonError(ex.jobInsertMany({ jobs: [newJob({ runAt: '+010000-01-01T00:00:00.000Z' })] }), 'INVALID_ARGUMENT');
    expect(err.details).toEqual({ sqlstate: '22009' });
    expect(await jobCount()).toBe(before);
  });
});
