// Parallel waits with event waits on several names, a payload match and deadlines, in runs
// bounded by runTimeoutMs: every wait parked together keeps its own names, match and deadline,
// so an event wakes the run (sendEvent) or makes the suspend due only when it ends one of them;
// the driving job is due no later than the run's deadline; an event sent after one wait's
// deadline never ends it, while a sleep parked beside it keeps the run asleep until its own time;
// a blocked run is not live, so its deadline does not time it out until it is replayed.

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { expectCountersMatchRows, jobOf, runEvents, runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();

const events = (runId: string) => runEvents(db, runId);

const step = async (runId: string, name: string) =>
  (
    await db.query<{ status: string; output: unknown; wake_at: Date | null; past: boolean }>(
      'SELECT status, output, wake_at, wake_at < now() AS past FROM baton.workflow_steps WHERE run_id = $1 AND name = $2',
      [runId, name],
    )
  ).rows[0];

describe('parallel waits with names, match and deadlines', () => {
  const engines = useWorkflowEngines(db);

  it('event waits on several names with a match, parked together in a run with runTimeoutMs: each wakes the run only for its own events', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    baton.workflow<{ orderId: number }>(
      'settle',
      async (ctx) => {
        const { orderId } = ctx.input;
        const [pay, ship] = await Promise.all([
          ctx.waitForEvent('pay', ['paid', 'waived'], { match: { orderId } }),
          ctx.waitForEvent('ship', ['shipped', 'collected'], { match: { orderId }, timeoutMs: 3_600_000 }),
        ]);
        return { pay, ship };
      },
      { runTimeoutMs: 600_000 },
    );
    await baton.start();
    const { run } = await baton.startWorkflow('settle', { orderId: 7 });
    expect(run.deadlineAt).toBeInstanceOf(Date);
    const waiting = await runInState(baton, run.id, 'waiting');
    expect(waiting.steps.map((s) => [s.key, s.kind, s.status]).sort()).toEqual([
      ['pay', 'event', 'waiting'],
      ['ship', 'event', 'waiting'],
    ]);
    // Due at the earliest of the waits' wake-ups and the run's deadline: the deadline here.
    expect((await jobOf(db, run.id)).run_at.getTime()).toBe(run.deadlineAt!.getTime());

    // Another order's events, and a name neither wait takes: no wake-up, all kept.
    const other = await baton.sendEvent(run.id, 'paid', { orderId: 8 });
    const foreign = await baton.sendEvent(run.id, 'refunded', { orderId: 7 });
    const otherShip = await baton.sendEvent(run.id, 'collected', { orderId: 9 });
    expect([other.resumed, foreign.resumed, otherShip.resumed]).toEqual([false, false, false]);
    expect((await jobOf(db, run.id)).run_at.getTime()).toBe(run.deadlineAt!.getTime());

    // The second wait's event wakes the run; the first is still not over, so it suspends again,
    // and the suspend is not made due by the unmatched events still stored.
    expect(await baton.sendEvent(run.id, 'collected', { orderId: 7, at: 'desk' })).toMatchObject({ resumed: true });
    await waitFor(async () => (await step(run.id, 'ship'))?.status === 'succeeded', { message: 'the ship wait to end' });
    await waitFor(
      async () => (await db.query('SELECT 1 FROM baton.workflow_runs WHERE id = $1 AND state = $2', [run.id, 'waiting'])).rowCount === 1,
      {
        message: 'the run to suspend again at the pay wait',
      },
    );
    const again = await jobOf(db, run.id);
    expect(again.state).toBe('pending');
    expect(again.run_at.getTime()).toBe(run.deadlineAt!.getTime());

    expect(await baton.sendEvent(run.id, 'waived', { orderId: 7, by: 'ann' })).toMatchObject({ resumed: true });
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toEqual({
      pay: { name: 'waived', payload: { orderId: 7, by: 'ann' } },
      ship: { name: 'collected', payload: { orderId: 7, at: 'desk' } },
    });
    expect((await events(run.id)).map((e) => [e.name, e.consumed_by])).toEqual([
      ['paid', null],
      ['refunded', null],
      ['collected', null],
      ['collected', 'ship'],
      ['waived', 'pay'],
    ]);
  });

  it('event waits parked together end timed_out at the run deadline when only one of them is met', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    baton.workflow('half', async (ctx) =>
      Promise.all([
        ctx.waitForEvent('a', ['a1', 'a2'], { match: { k: 1 } }),
        ctx.waitForEvent('b', ['b1', 'b2'], { match: { k: 2 }, timeoutMs: 3_600_000 }),
      ]),
    );
    await baton.start();
    const { run } = await baton.startWorkflow('half', null, { runTimeoutMs: 1_500 });
    await runInState(baton, run.id, 'waiting');
    expect(await baton.sendEvent(run.id, 'b2', { k: 2 })).toMatchObject({ resumed: true });
    expect(await baton.sendEvent(run.id, 'a1', { k: 2 })).toMatchObject({ resumed: false });
    const done = await runInState(baton, run.id, 'timed_out');
    await waitFor(
      async () => (await db.query('SELECT 1 FROM baton.workflow_runs WHERE id = $1 AND state = $2', [run.id, 'timed_out'])).rowCount === 1,
      { message: 'the run to be recorded timed_out' },
    );
    expect(done.steps.map((s) => [s.key, s.status]).sort()).toEqual([
      ['a', 'waiting'],
      ['b', 'succeeded'],
    ]);
    expect(await step(run.id, 'b')).toMatchObject({ output: { name: 'b2', payload: { k: 2 } } });
    await expectCountersMatchRows(db);
  });

  it('a sleep parked beside an event wait: an event sent after the wait’s deadline neither wakes the run nor ends the wait, and the run sleeps on', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    baton.workflow(
      'nap-or-go',
      async (ctx) => {
        // The first execution pauses the queue before it parks: no worker takes the run at the
        // wait's deadline, however late this test looks at it (the run stays waiting meanwhile).
        await ctx.step('pause', async () => {
          await baton.admin.pauseQueue('default');
          return null;
        });
        const [, go] = await Promise.all([
          ctx.sleep('nap', 2_500),
          ctx.waitForEvent('go', ['go', 'start'], { match: { ok: true }, timeoutMs: 300 }),
        ]);
        return { go };
      },
      { runTimeoutMs: 600_000 },
    );
    await baton.start();
    const { run } = await baton.startWorkflow('nap-or-go');
    await runInState(baton, run.id, 'waiting');
    // The queue is paused: the event comes after the wait's deadline, the resume later.
    try {
      await waitFor(async () => (await step(run.id, 'go'))?.past === true, {
        timeoutMs: 10_000,
        message: 'the go wait to pass its deadline',
      });
      expect(await baton.sendEvent(run.id, 'start', { ok: true })).toMatchObject({ resumed: false });
    } finally {
      await baton.admin.resumeQueue('default');
    }
    // The run resumes (due at the wait's deadline): the wait answers null, and the run suspends
    // at the sleep alone, due at its wake-up: the late event does not make that suspend due.
    await waitFor(async () => (await step(run.id, 'go'))?.status === 'succeeded', { message: 'the go wait to time out' });
    const sleeping = await runInState(baton, run.id, 'sleeping');
    expect(sleeping.steps.find((s) => s.key === 'go')?.output).toBeNull();
    const nap = await step(run.id, 'nap');
    expect(nap?.status).toBe('waiting');
    const job = await jobOf(db, run.id);
    expect(job.state).toBe('pending');
    expect(job.run_at.getTime()).toBe(nap!.wake_at!.getTime());

    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toEqual({ go: null });
    expect(await events(run.id)).toEqual([{ name: 'start', payload: { ok: true }, consumed_by: null }]);
  });

  it('a blocked run stays blocked past its run deadline (listed and counted so); its replay past the deadline records it timed_out', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    let renamed = false;
    baton.workflow('drift', async (ctx) => {
      await ctx.step(renamed ? 'charge-card' : 'charge', () => 'charged');
      await Promise.all([ctx.waitForEvent('go', ['go', 'now'], { match: { ok: true } }), ctx.sleep('nap', 3_600_000)]);
      return 'done';
    });
    await baton.start();
    const { run } = await baton.startWorkflow('drift', null, { runTimeoutMs: 1_500 });
    await runInState(baton, run.id, 'waiting');
    // Deploy a rename without a patch, and wake the run before its deadline: it blocks at the
    // renamed step, before it reaches the waits (the event stays for them).
    renamed = true;
    expect(await baton.sendEvent(run.id, 'now', { ok: true })).toMatchObject({ resumed: true });
    const blocked = await runInState(baton, run.id, 'blocked');
    expect(blocked.blockedReason).toMatchObject({ code: 'NON_DETERMINISM' });
    await waitFor(
      async () =>
        (await db.query<{ past: boolean }>('SELECT deadline_at < now() AS past FROM baton.workflow_runs WHERE id = $1', [run.id])).rows[0]
          ?.past === true,
      { timeoutMs: 10_000, message: 'the run to pass its deadline' },
    );
    expect((await baton.workflows.getRun(run.id))?.state).toBe('blocked');
    expect((await baton.workflows.listRuns({ state: 'blocked' })).map((r) => r.id)).toEqual([run.id]);
    expect(await baton.workflows.listRuns({ state: 'timed_out' })).toEqual([]);
    expect((await baton.workflows.countRunsByState()).filter((c) => c.name === 'drift')).toEqual([
      { name: 'drift', state: 'blocked', n: 1 },
    ]);

    await baton.workflows.replayRun(run.id);
    const done = await runInState(baton, run.id, 'timed_out');
    await waitFor(
      async () => (await db.query('SELECT 1 FROM baton.workflow_runs WHERE id = $1 AND state = $2', [run.id, 'timed_out'])).rowCount === 1,
      { message: 'the replayed run to be recorded timed_out' },
    );
    expect(done.steps.map((s) => [s.key, s.status]).sort()).toEqual([
      ['charge', 'succeeded'],
      ['go', 'waiting'],
      ['nap', 'waiting'],
    ]);
    await expectCountersMatchRows(db);
  });
});
