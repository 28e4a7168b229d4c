// Cancel requests in one engine: a cancel made by the process that holds the job aborts its
// handler at once (no NOTIFY or heartbeat needed); one made while the claim's answer was on its
// way ends the job cancelled without calling its handler; a leased job not started yet is cancelled
// when given back; a handler that ignores its signal while its engine stops is given back
// cancelled, never pending (so is a leased one whose holder is gone); a cancel racing the handler's completion leaves exactly one
// outcome that matches both (succeeded, with the request recorded only if it came first); a
// workflow's driving job asked to stop ends cancelled, also when the workflow suspends.

import { describe, expect, it } from 'vitest';
import { BatonError, type EngineEvents, JobCancelledError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { expectCountersMatchRows, jobOf, runInState } from '../workflow/harness.ts';
import { isClaim, row, rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();

describe('cancel requests in the engine that holds the job', () => {
  // Poll dispatch (no LISTEN) and a long lease (heartbeats every 20 s): only the local path is quick.
  const engines = useEngines(db, () => ({ dispatch: 'poll', pollIntervalMs: 50, leaseMs: 60_000 }));

  it("a cancel from the holder's own engine aborts the handler at once; it stops and the job is cancelled", async () => {
    const signalled: Array<EngineEvents['cancelSignalled'][0]> = [];
    const ended: string[] = [];
    const started = engines.gate();
    const baton = await engines.start({
      queues: { q: 2 },
      handlers: {
        wait: (ctx) =>
          new Promise((_, reject) => {
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
            started.resolve();
          }),
      },
    });
    baton.events.on('cancelSignalled', (e) => signalled.push(e));
    baton.events.on('cancelled', (e) => ended.push(e.job.id));
    const { job } = await baton.enqueue({ jobType: 'wait', queue: 'q' });
    // The handler runs (its row reads running from the claim's commit on, before the engine holds the lease).
    await started.promise;
    const asked = await baton.admin.cancel(job.id);
    expect(asked).toMatchObject({ state: 'running' });
    // Synchronously: the local path needs no round trip.
    expect(signalled.map((e) => [e.job.id, e.via])).toEqual([[job.id, 'local']]);
    const r = await rowInState(db, job.id, 'cancelled');
    expect(r.errors.map((e) => [e.kind, e.name])).toEqual([['cancelled', 'JobCancelledError']]);
    await waitFor(() => ended.includes(job.id), { message: "the 'cancelled' event" });
    expect(baton.stats()).toMatchObject({ cancelled: 1, cancelSignalled: 1, retried: 0, deadLettered: 0 });
  });

  it("a cancel made while the claim's answer is on its way ends the job cancelled once the engine holds it, its handler never called", async () => {
    const signalled: Array<EngineEvents['cancelSignalled'][0]> = [];
    let called = 0;
    const claimed = engines.gate();
    const answer = engines.gate();
    let holding = true;
    // Holds back the first claim answer that carries a job: the row is running, the engine does not know yet.
    const pool = engines.pool(async (config, run) => {
      const result = await run();
      if (!holding || !isClaim(config) || result.rows.length === 0) return result;
      holding = false;
      claimed.resolve();
      await answer.promise;
      return result;
    });
    const baton = await engines.start({
      pool,
      queues: { q: 2 },
      handlers: {
        wait: (ctx) => {
          called++;
          return new Promise((_, reject) => {
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
          });
        },
      },
    });
    baton.events.on('cancelSignalled', (e) => signalled.push(e));
    const { job } = await baton.enqueue({ jobType: 'wait', queue: 'q' });
    await claimed.promise;
    expect(await baton.admin.cancel(job.id)).toMatchObject({ state: expect.stringMatching(/^(running|leased)$/) });
    expect(signalled).toEqual([]);
    answer.resolve();
    // Long before the first heartbeat (20 s) would have told it.
    const r = await rowInState(db, job.id, 'cancelled');
    expect(r.errors.map((e) => [e.kind, e.name])).toEqual([['cancelled', 'JobCancelledError']]);
    expect(signalled.map((e) => [e.job.id, e.via])).toEqual([[job.id, 'local']]);
    expect(called).toBe(0);
  });

  it('the signal reason is a JobCancelledError naming the job; the lease is still held (checkLease passes)', async () => {
    let seen: unknown = null;
    let leaseHeld = false;
    const started = engines.gate();
    const baton = await engines.start({
      queues: { q: 1 },
      handlers: {
        look: (ctx) =>
          new Promise((resolve) => {
            started.resolve();
            ctx.signal.addEventListener(
              'abort',
              () => {
                seen = ctx.signal.reason;
                ctx.checkLease();
                leaseHeld = true;
                resolve('done anyway');
              },
              { once: true },
            );
          }),
      },
    });
    const { job } = await baton.enqueue({ jobType: 'look', queue: 'q' });
    await started.promise;
    await baton.admin.cancel(job.id);
    await rowInState(db, job.id, 'succeeded');
    expect(seen).toBeInstanceOf(JobCancelledError);
    expect((seen as JobCancelledError).jobId).toBe(job.id);
    expect(leaseHeld).toBe(true);
    expect(await baton.admin.getJob(job.id)).toMatchObject({ state: 'succeeded', result: 'done anyway' });
  });

  it('a handler that ignores its signal when its engine stops is given back cancelled, never pending', async () => {
    const stuck = engines.gate();
    const baton = await engines.start({ queues: { q: 1 }, handlers: { stuck: () => stuck.promise } });
    const { job } = await baton.enqueue({ jobType: 'stuck', queue: 'q' });
    await rowInState(db, job.id, 'running');
    await baton.admin.cancel(job.id);
    // The drain deadline aborts it again (already aborted), then its lease is given back.
    await baton.stop({ drainMs: 0 });
    expect(await row(db, job.id)).toMatchObject({ state: 'cancelled', lease_owner: null, attempt: 1 });
    stuck.resolve();
  });

  it('a leased job not started yet, with a request, whose holder is gone: the reaper ends it cancelled, never pending', async () => {
    const producer = engines.producer();
    const { job } = await producer.enqueue({ jobType: 'never', queue: 'q' });
    // Claimed into leased by hand, as a worker that stops before starting it would hold it.
    await db.query(
      `UPDATE baton.jobs SET state = 'leased', lease_token = nextval('baton.lease_token_seq'), lease_owner = 'w-gone',
         lease_expires_at = now() - interval '1 second', attempt = 1 WHERE id = $1`,
      [job.id],
    );
    expect(await producer.admin.cancel(job.id)).toMatchObject({ state: 'leased' });
    // Its lease has run out: the reaper (this engine leads) ends it cancelled.
    await engines.start({ queues: { other: 1 }, reaperIntervalMs: 50 });
    expect(await rowInState(db, job.id, 'cancelled')).toMatchObject({ attempt: 1, lease_owner: null });
  });

  it('a cancel racing completion leaves one outcome: succeeded, with the request recorded exactly when it was accepted', async () => {
    const baton = await engines.start({ queues: { q: 4 }, handlers: { quick: (ctx) => ({ n: (ctx.payload as { n: number }).n }) } });
    const outcomes: string[] = [];
    for (let n = 0; n < 20; n++) {
      const { job } = await baton.enqueue({ jobType: 'quick', queue: 'q', payload: { n } });
      // Cancel as soon as it is claimed: before, during or after its completion write.
      await waitFor(async () => (await row(db, job.id)).state !== 'pending', { intervalMs: 1, message: `job ${job.id} claimed` });
      const answer = await baton.admin.cancel(job.id).then(
        (j) => j.state,
        (err: unknown) => (err instanceof BatonError ? err.code : String(err)),
      );
      const done = await rowInState(db, job.id, 'succeeded');
      const requested = (await db.query('SELECT cancel_requested_at FROM baton.jobs WHERE id = $1', [job.id])).rows[0].cancel_requested_at;
      expect(done.result).toEqual({ n });
      // Accepted (the job still running) means recorded; refused (409: already succeeded) means not.
      if (answer === 'JOB_STATE_CONFLICT') expect(requested).toBeNull();
      else expect([answer, requested instanceof Date]).toEqual([expect.stringMatching(/^(running|leased)$/), true]);
      outcomes.push(answer);
    }
    expect(outcomes.every((o) => ['running', 'leased', 'JOB_STATE_CONFLICT'].includes(o))).toBe(true);
  });
});

describe("a workflow's driving job asked to stop through the jobs API", () => {
  const engines = useEngines(db, () => ({ dispatch: 'poll', pollIntervalMs: 50, leaseMs: 60_000 }));

  it('a step that stops on the signal ends the job cancelled, and the run reads cancelled', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    baton.workflow('stoppable', async (ctx) =>
      ctx.step(
        'wait',
        () =>
          new Promise((_, reject) => {
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
          }),
      ),
    );
    await baton.start();
    const { run } = await baton.startWorkflow('stoppable');
    const job = await waitFor(async () => {
      const j = await jobOf(db, run.id);
      return j.state === 'running' ? j : null;
    });
    await baton.admin.cancel(job.id);
    await rowInState(db, job.id, 'cancelled');
    await runInState(baton, run.id, 'cancelled');
    await expectCountersMatchRows(db);
  });

  it('a workflow that suspends (sleeps) after the request gives its job back cancelled, not pending', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    const reached = engines.gate();
    const go = engines.gate();
    baton.workflow('sleeper', async (ctx) => {
      await ctx.step('first', async () => {
        reached.resolve();
        await go.promise;
        return 1;
      });
      await ctx.sleep('nap', 60_000);
    });
    await baton.start();
    const { run } = await baton.startWorkflow('sleeper');
    await reached.promise;
    const { id } = await jobOf(db, run.id);
    await baton.admin.cancel(id);
    go.resolve();
    await rowInState(db, id, 'cancelled');
    await runInState(baton, run.id, 'cancelled');
    await expectCountersMatchRows(db);
  });
});
