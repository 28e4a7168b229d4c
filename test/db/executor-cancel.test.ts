// Conformance of cancel requests on leased and running jobs (migration 0020), on the executor:
// the request is recorded beside the state (the lease untouched) and NOTIFYed to its holder;
// heartbeats report it; and each outcome write, still fenced by the token, ends such a job by
// what happened: a failed attempt, a give-back or a reaped lease as cancelled (never pending,
// never dead-lettered), a completion as succeeded with the request kept. Replay clears it.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { cancelChannelFor } from '../../src/core/notifier.ts';
import { insertJob, insertWorker } from '../helpers/factory.ts';
import { waitFor } from '../helpers/wait.ts';
import { attemptError, claim, ex, expireLeases, fresh, LEASE, ms, reapExpired, row, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();

/** finished_counts agrees with the rows of `queue` (every finishing statement counts what it finishes). */
async function expectCounted(queue: string): Promise<void> {
  const r = await db.query<{ counted: unknown; rows: unknown }>(
    `SELECT
      (SELECT COALESCE(json_agg(c ORDER BY c.state), '[]') FROM (
        SELECT state, sum(n)::int AS n FROM baton.finished_counts WHERE queue = $1 GROUP BY state HAVING sum(n) <> 0) c) AS counted,
      (SELECT COALESCE(json_agg(j ORDER BY j.state), '[]') FROM (
        SELECT state, count(*)::int AS n FROM baton.jobs WHERE queue = $1 AND finished_at IS NOT NULL GROUP BY state) j) AS rows`,
    [queue],
  );
  expect(r.rows[0]!.counted).toEqual(r.rows[0]!.rows);
}

/** A running job of a fresh queue, claimed (attempt 1 of 5), with a cancel request recorded. */
async function requested(opts: { maxAttempts?: number } = {}) {
  const queue = fresh();
  await insertJob(db.pool, { queue, maxAttempts: opts.maxAttempts ?? 5 });
  const [job] = await claim(queue, 1);
  const answered = await ex.jobCancel({ id: job!.id });
  expect(answered).toMatchObject({ id: job!.id, state: 'running', token: job!.token });
  return { queue, job: job!, lease: { id: job!.id, token: job!.token } };
}

describe('jobCancel on a leased or running job', () => {
  it('records the request (the first one kept) and touches nothing else: state, lease, attempt, updated_at', async () => {
    const queue = fresh();
    await insertJob(db.pool, { queue });
    const [job] = await claim(queue, 1, { intoRunning: false });
    const before = await row(job!.id);
    const first = await ex.jobCancel({ id: job!.id });
    const after = await row(job!.id);
    expect(first).toMatchObject({ id: job!.id, state: 'leased', token: job!.token });
    expect(first!.cancelRequestedAt).toEqual(after.cancel_requested_at);
    const { cancel_requested_at: at, ...rest } = after;
    const { cancel_requested_at: none, ...was } = before;
    expect(none).toBeNull();
    expect(at).toBeInstanceOf(Date);
    // updated_at unchanged: fast reclaim reads it as proof that the owner was alive.
    expect(rest).toEqual(was);
    const again = await ex.jobCancel({ id: job!.id });
    expect(again!.cancelRequestedAt).toEqual(at);
    expect((await row(job!.id)).cancel_requested_at).toEqual(at);
  });

  it('NOTIFYs the cancel channel with "<id>:<token>", so only that lease\'s holder acts on it', async () => {
    const queue = fresh();
    await insertJob(db.pool, { queue });
    const [job] = await claim(queue, 1);
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    const got: Array<{ channel: string; payload: string | undefined }> = [];
    listener.on('notification', (n) => got.push({ channel: n.channel, payload: n.payload }));
    try {
      await listener.query(`LISTEN ${listener.escapeIdentifier(cancelChannelFor(db.schema))}`);
      await ex.jobCancel({ id: job!.id });
      await waitFor(() => got.length > 0, { message: 'the cancel notification' });
      expect(got).toEqual([{ channel: cancelChannelFor(db.schema), payload: `${job!.id}:${job!.token}` }]);
    } finally {
      await listener.end();
    }
  });
});

describe('jobHeartbeatMany', () => {
  it('renews a lease with a request as any other, and names it in cancelRequested', async () => {
    const { job, lease } = await requested();
    const queue = fresh();
    await insertJob(db.pool, { queue });
    const [plain] = await claim(queue, 1);
    const hb = await ex.jobHeartbeatMany({ leases: [lease, { id: plain!.id, token: plain!.token }], leaseMs: 45_000 });
    expect([...hb.alive].sort()).toEqual([job.id, plain!.id].sort());
    expect([...hb.cancelRequested]).toEqual([job.id]);
    const r = await row(job.id);
    expect(ms(r.lease_expires_at, r.updated_at)).toBe(45_000);
    // A stale token is fenced off and reports nothing.
    const stale = await ex.jobHeartbeatMany({ leases: [{ id: job.id, token: '1' }], leaseMs: 45_000 });
    expect([stale.alive.size, stale.cancelRequested.size]).toEqual([0, 0]);
  });
});

describe('outcome writes of a job with a cancel request', () => {
  it('jobFailMany: a transient failure with attempts left ends it cancelled, not pending; the error kept, of kind cancelled', async () => {
    const { queue, job, lease } = await requested();
    const before = await row(job.id);
    const err = attemptError(1, job.token, { message: 'stopped on the signal', name: 'JobCancelledError' });
    const states = await ex.jobFailMany({ items: [{ ...lease, error: err, terminal: false }], backoffBaseMs: 1, backoffCapMs: 1 });
    expect([...states]).toEqual([[job.id, 'cancelled']]);
    const r = await row(job.id);
    expect(r).toMatchObject({ state: 'cancelled', dead_letter_reason: null, lease_owner: null, lease_expires_at: null, attempt: 1 });
    expect(r.finished_at).toEqual(r.updated_at);
    expect(r.run_at).toEqual(before.run_at);
    expect(r.last_error).toMatchObject({
      kind: 'cancelled',
      message: 'stopped on the signal',
      name: 'JobCancelledError',
      token: job.token,
    });
    expect(r.errors).toHaveLength(1);
    expect(r.cancel_requested_at).toBeInstanceOf(Date);
    expect(await claim(queue, 10)).toEqual([]);
    await expectCounted(queue);
  });

  it('jobFailMany: a terminal failure, or the last attempt, ends it cancelled too (not dead-lettered)', async () => {
    const a = await requested();
    const b = await requested({ maxAttempts: 1 });
    const states = await ex.jobFailMany({
      items: [
        { ...a.lease, error: attemptError(1, a.job.token, { kind: 'terminal' }), terminal: true },
        { ...b.lease, error: attemptError(1, b.job.token), terminal: false },
      ],
      backoffBaseMs: 1,
      backoffCapMs: 1,
    });
    expect(Object.fromEntries(states)).toEqual({ [a.job.id]: 'cancelled', [b.job.id]: 'cancelled' });
    await expectCounted(a.queue);
    await expectCounted(b.queue);
  });

  it('jobFailMany stays fenced: a stale token writes nothing, request or not', async () => {
    const { job } = await requested();
    const before = await row(job.id);
    const states = await ex.jobFailMany({
      items: [{ id: job.id, token: '1', error: attemptError(1, '1'), terminal: false }],
      backoffBaseMs: 1,
      backoffCapMs: 1,
    });
    expect(states.size).toBe(0);
    expect(await row(job.id)).toEqual(before);
  });

  it('jobCompleteMany: the handler finished anyway, so it succeeded, with the request kept beside it', async () => {
    const { queue, job, lease } = await requested();
    const done = await ex.jobCompleteMany({ items: [{ ...lease, result: { charged: true } }] });
    expect([...done]).toEqual([job.id]);
    const r = await row(job.id);
    expect(r).toMatchObject({ state: 'succeeded', result: { charged: true } });
    expect(r.cancel_requested_at).toBeInstanceOf(Date);
    expect(await ex.jobGet({ id: job.id })).toMatchObject({ state: 'succeeded', cancelRequestedAt: r.cancel_requested_at });
    await expectCounted(queue);
  });

  it('jobReleaseMany: given back (refund or not) it is cancelled, never pending again, its attempt kept', async () => {
    for (const refundAttempt of [true, false]) {
      const { queue, job, lease } = await requested();
      expect([...(await ex.jobReleaseMany({ leases: [lease], refundAttempt }))]).toEqual([job.id]);
      const r = await row(job.id);
      expect(r).toMatchObject({ state: 'cancelled', dead_letter_reason: null, lease_owner: null, lease_expires_at: null, attempt: 1 });
      expect(r.finished_at).toEqual(r.updated_at);
      expect(await claim(queue, 10)).toEqual([]);
      await expectCounted(queue);
    }
  });

  it('jobReap: an expired lease (worker gone, handler or not) with a request is cancelled, with the attempts left', async () => {
    const { queue, job } = await requested();
    await expireLeases([job.id]);
    const reaped = await reapExpired([job.id]);
    expect(reaped).toEqual([{ id: job.id, state: 'cancelled', queue, expired: true }]);
    const r = await row(job.id);
    expect(r).toMatchObject({ state: 'cancelled', dead_letter_reason: null, lease_owner: null });
    expect(r.last_error).toMatchObject({ kind: 'lease_expired', token: job.token });
    expect(await claim(queue, 10)).toEqual([]);
    await expectCounted(queue);
  });

  it("jobReap: fast reclaim of a gone worker's lease with a request cancels it too", async () => {
    const queue = fresh();
    await insertWorker(db.pool, 'w-gone-cancel', { goneSince: { inMs: -120_000 } });
    const id = await insertJob(db.pool, {
      queue,
      state: 'running',
      leaseOwner: 'w-gone-cancel',
      leaseExpiresAt: { inMs: LEASE },
      updatedAt: { inMs: -300_000 },
    });
    await ex.jobCancel({ id });
    const reaped = await ex.jobReap({ limit: 10_000, graceMs: 1_000, fastReclaim: true });
    expect(reaped.filter((r) => r.id === id)).toEqual([{ id, state: 'cancelled', queue, expired: false }]);
    expect((await row(id)).last_error).toMatchObject({ kind: 'worker_gone' });
    await expectCounted(queue);
  });

  it('no statement can set a job with a request back to pending or waiting: the table refuses the row', async () => {
    const { job } = await requested();
    await expect(
      db.query(`UPDATE baton.jobs SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL WHERE id = $1`, [job.id]),
    ).rejects.toThrow(/jobs_cancel_request_not_queued/);
  });

  it('jobReplay clears the request with the outcome: a replayed job runs, and retries, normally', async () => {
    const { queue, job, lease } = await requested();
    await ex.jobCompleteMany({ items: [{ ...lease, result: null }] });
    const replayed = await ex.jobReplay({ id: job.id });
    expect(replayed).toMatchObject({ state: 'pending', cancelRequestedAt: null });
    const [again] = await claim(queue, 1);
    expect(again).toMatchObject({ id: job.id, cancelRequestedAt: null });
    const states = await ex.jobFailMany({
      items: [{ id: job.id, token: again!.token, error: attemptError(1, again!.token), terminal: false }],
      backoffBaseMs: 1,
      backoffCapMs: 1,
    });
    expect([...states]).toEqual([[job.id, 'pending']]);
    await expectCounted(queue);
  });
});
