// Event waits on several names and on a payload match, and a timeout decided at its deadline:
// the first event of any name wins, an event that does not match neither ends the wait nor
// wakes the run and stays for later waits, and an event that arrived after the wait's deadline
// (database clock) never ends it, however late the run resumes.

import { describe, expect, it } from 'vitest';
import { TerminalError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { jobOf, runEvents, runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();

const events = (runId: string) => runEvents(db, runId);

/** Until the database clock is past the wake-up time of the run's wait `key`. */
const pastWakeUp = (runId: string, key: string) =>
  waitFor(
    async () =>
      (
        await db.query<{ past: boolean }>('SELECT wake_at < now() AS past FROM baton.workflow_steps WHERE run_id = $1 AND name = $2', [
          runId,
          key,
        ])
      ).rows[0]?.past === true,
    { timeoutMs: 10_000, message: `the wait "${key}" to pass its deadline` },
  );

describe('waitForEvent: names, match and deadline', () => {
  const engines = useWorkflowEngines(db);

  it('waits on several names: the first to arrive wins and says its name; the other is kept for a later wait', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    baton.workflow('decide', async (ctx) => {
      const decision = await ctx.waitForEvent('decision', ['approved', 'rejected']);
      const later = await ctx.waitForEvent('later', 'approved', { timeoutMs: 60_000 });
      return { decision, later };
    });
    await baton.start();
    const { run } = await baton.startWorkflow('decide');
    const waiting = await runInState(baton, run.id, 'waiting');
    expect(waiting.steps.find((s) => s.key === 'decision')).toMatchObject({ kind: 'event', status: 'waiting' });
    expect(await baton.sendEvent(run.id, 'rejected', { by: 'ann' })).toMatchObject({ resumed: true });
    await waitFor(async () => (await baton.workflows.getRun(run.id))?.steps.some((s) => s.key === 'later'), {
      message: 'the run to reach its second wait',
    });
    await runInState(baton, run.id, 'waiting');
    await baton.sendEvent(run.id, 'approved', { by: 'bob' });
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toEqual({
      decision: { name: 'rejected', payload: { by: 'ann' } },
      later: { name: 'approved', payload: { by: 'bob' } },
    });
  });

  it('a match on the payload: an event that does not contain it neither ends the wait nor wakes the run, and stays for later waits', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    baton.workflow<{ orderId: number }>('order', async (ctx) => {
      const mine = await ctx.waitForEvent('paid', 'paid', { match: { orderId: ctx.input.orderId, meta: { ok: true } } });
      const any = await ctx.waitForEvent('any', 'paid', { timeoutMs: 60_000 });
      return { mine, any };
    });
    await baton.start();
    const { run } = await baton.startWorkflow('order', { orderId: 7 });
    await runInState(baton, run.id, 'waiting');
    const other = await baton.sendEvent(run.id, 'paid', { orderId: 8, meta: { ok: true } });
    const partial = await baton.sendEvent(run.id, 'paid', { orderId: 7, meta: { ok: false } });
    expect([other.resumed, partial.resumed]).toEqual([false, false]);
    const job = await jobOf(db, run.id);
    expect(job.state).toBe('pending');
    expect(job.run_at.getUTCFullYear()).toBe(9999);
    expect((await baton.workflows.getRun(run.id))?.state).toBe('waiting');

    expect(await baton.sendEvent(run.id, 'paid', { orderId: 7, meta: { ok: true, extra: 1 }, amount: 5 })).toMatchObject({ resumed: true });
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toEqual({
      mine: { name: 'paid', payload: { orderId: 7, meta: { ok: true, extra: 1 }, amount: 5 } },
      // The unmatched events were kept: the next wait without a match takes the oldest.
      any: { name: 'paid', payload: { orderId: 8, meta: { ok: true } } },
    });
    expect((await events(run.id)).map((e) => e.consumed_by)).toEqual(['any', null, 'paid']);
  });

  it('an event that arrived after the deadline does not end the wait, even when the run resumes after it: the wait times out', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    baton.workflow('late', async (ctx) => ctx.waitForEvent('w', 'go', { timeoutMs: 500 }));
    await baton.start();
    const { run } = await baton.startWorkflow('late');
    await runInState(baton, run.id, 'waiting');
    // No worker takes the run at its deadline: the event comes first, the resume after it.
    await baton.admin.pauseQueue('default');
    await pastWakeUp(run.id, 'w');
    // Kept, but it resumes nothing: the wait it would have ended is over.
    expect(await baton.sendEvent(run.id, 'go', { late: true })).toMatchObject({ duplicate: false, resumed: false });
    await baton.admin.resumeQueue('default');
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toBeNull();
    expect(await events(run.id)).toEqual([{ name: 'go', payload: { late: true }, consumed_by: null }]);
  });

  it('an event that arrived before the deadline ends the wait, even when the run resumes after the deadline', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    baton.workflow('early', async (ctx) => ctx.waitForEvent('w', 'go', { timeoutMs: 500 }));
    await baton.start();
    const { run } = await baton.startWorkflow('early');
    await runInState(baton, run.id, 'waiting');
    await baton.admin.pauseQueue('default');
    await baton.sendEvent(run.id, 'go', { early: true });
    await pastWakeUp(run.id, 'w');
    await baton.admin.resumeQueue('default');
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toEqual({ name: 'go', payload: { early: true } });
  });

  it('refuses a bad match or bad names as a terminal error of the run', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    const errors: unknown[] = [];
    baton.workflow<{ bad: 'match' | 'names' }>('bad', async (ctx) => {
      try {
        if (ctx.input.bad === 'match') await ctx.waitForEvent('w', 'go', { match: [1] as unknown as Record<string, unknown> });
        else await ctx.waitForEvent('w', []);
      } catch (err) {
        errors.push(err);
        throw err;
      }
    });
    await baton.start();
    const a = await baton.startWorkflow('bad', { bad: 'match' });
    const b = await baton.startWorkflow('bad', { bad: 'names' });
    await runInState(baton, a.run.id, 'dead_lettered');
    await runInState(baton, b.run.id, 'dead_lettered');
    expect(errors).toHaveLength(2);
    expect(errors.every((e) => e instanceof TerminalError)).toBe(true);
    expect(String(errors.map((e) => (e as Error).message))).toMatch(/match must be a JSON object.*non-empty string/s);
  });
});
