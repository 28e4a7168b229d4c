// Continuations end to end: sleep and waitForEvent end the execution and free the
// worker's slot (its job pending, attempt refunded), resume on time or on the event,
// an event sent before the wait is kept, a repeated idempotency key is absorbed, a
// wait times out; cancel and replay have the same guards as jobs (409).

import { describe, expect, it } from 'vitest';
import { TerminalError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { batonCode, expectCountersMatchRows, jobOf, runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();

const code = batonCode;

describe('workflow continuations', () => {
  const engines = useWorkflowEngines(db);

  it('sleep ends the execution with the job pending and its attempt refunded, then resumes after the sleep', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    const calls = { before: 0, after: 0 };
    baton.workflow('nap', async (ctx) => {
      await ctx.step('before', () => ++calls.before);
      await ctx.sleep('nap', 1_500);
      return ctx.step('after', () => ++calls.after);
    });
    await baton.start();
    const { run } = await baton.startWorkflow('nap');
    const sleeping = await runInState(baton, run.id, 'sleeping');
    expect(sleeping.wakeAt).toBeInstanceOf(Date);
    expect(sleeping.steps.map((s) => [s.key, s.kind, s.status])).toEqual([
      ['before', 'step', 'succeeded'],
      ['nap', 'sleep', 'waiting'],
    ]);
    const job = await jobOf(db, run.id);
    expect(job).toMatchObject({ state: 'pending', attempt: 0 });
    expect(job.run_at.getTime()).toBe(sleeping.wakeAt?.getTime());
    expect(baton.stats().slots.default?.inFlight).toBe(0);
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toBe(1);
    expect(calls).toEqual({ before: 1, after: 1 });
    expect(done.steps.find((s) => s.key === 'nap')?.status).toBe('succeeded');
    expect(baton.stats().workflows.resumes.sleep).toBe(1);
  });

  it('1,000 runs waiting for an event hold no worker slot; each event resumes its run', async () => {
    const baton = engines.create({ queues: { default: 20 }, poolSize: 6 });
    baton.workflow<{ i: number }>('await', async (ctx) => {
      const ev = await ctx.waitForEvent<{ v: number }>('go', 'go');
      return (ev?.payload.v ?? -1) + ctx.input.i;
    });
    await baton.start();
    const ids: string[] = [];
    for (let i = 0; i < 1_000; i += 50) {
      const batch = await Promise.all(Array.from({ length: 50 }, (_, k) => baton.startWorkflow('await', { i: i + k })));
      ids.push(...batch.map((b) => b.run.id));
    }
    await waitFor(
      async () => {
        const counts = await baton.workflows.countRunsByState();
        return counts.find((c) => c.state === 'waiting')?.n === 1_000;
      },
      { timeoutMs: 120_000, intervalMs: 200, message: '1,000 runs to wait' },
    );
    expect(baton.stats().slots.default?.inFlight).toBe(0);
    const live = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE state IN ('leased', 'running')`);
    expect(live.rows[0].n).toBe(0);
    for (let i = 0; i < ids.length; i += 50) {
      const results = await Promise.all(ids.slice(i, i + 50).map((id) => baton.sendEvent(id, 'go', { v: 1000 })));
      expect(results.every((r) => r.resumed && !r.duplicate)).toBe(true);
    }
    await waitFor(
      async () => {
        const counts = await baton.workflows.countRunsByState();
        return counts.find((c) => c.state === 'succeeded')?.n === 1_000;
      },
      { timeoutMs: 120_000, intervalMs: 200, message: '1,000 runs to succeed' },
    );
    const outputs = await db.query(`SELECT count(*)::int AS n FROM baton.workflow_runs WHERE output = to_jsonb(1000 + (input->>'i')::int)`);
    expect(outputs.rows[0].n).toBe(1_000);
    expect(baton.stats().workflows.resumes.event).toBe(1_000);
  }, 300_000);

  it('an event sent before the run waits for it is kept and taken without suspending', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    const inside = engines.gate();
    const release = engines.gate();
    baton.workflow('early', async (ctx) => {
      await ctx.step('first', async () => {
        inside.resolve();
        await release.promise;
      });
      return ctx.waitForEvent('w', 'shipped', { timeoutMs: 60_000 });
    });
    await baton.start();
    const { run } = await baton.startWorkflow('early');
    await inside.promise;
    const sent = await baton.sendEvent(run.id, 'shipped', { tracking: 'T1' });
    expect(sent).toMatchObject({ duplicate: false, resumed: false });
    release.resolve();
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toEqual({ name: 'shipped', payload: { tracking: 'T1' } });
    expect(baton.stats().workflows.resumes).toMatchObject({ event: 0, timeout: 0 });
  });

  it('a repeated idempotency key is absorbed; a wait with nothing left times out with null', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    baton.workflow('twice', async (ctx) => {
      const first = await ctx.waitForEvent('w', 'ping', { timeoutMs: 60_000 });
      const second = await ctx.waitForEvent('w', 'ping', { timeoutMs: 300 });
      return { first, second };
    });
    await baton.start();
    const { run } = await baton.startWorkflow('twice');
    await runInState(baton, run.id, 'waiting');
    const a = await baton.sendEvent(run.id, 'ping', 1, { idempotencyKey: 'e1' });
    const b = await baton.sendEvent(run.id, 'ping', 2, { idempotencyKey: 'e1' });
    expect(b).toEqual({ eventId: a.eventId, duplicate: true, resumed: false });
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toEqual({ first: { name: 'ping', payload: 1 }, second: null });
    expect(done.steps.map((s) => [s.key, s.status, s.output])).toEqual([
      ['w', 'succeeded', { name: 'ping', payload: 1 }],
      ['w#2', 'succeeded', null],
    ]);
    expect(baton.stats().workflows.resumes).toMatchObject({ event: 1, timeout: 1 });
    expect(await code(baton.sendEvent(run.id, 'ping', 3))).toBe('RUN_STATE_CONFLICT');
    // A retry of an event the finished run already holds is still a duplicate.
    expect(await baton.sendEvent(run.id, 'ping', 2, { idempotencyKey: 'e1' })).toEqual({
      eventId: a.eventId,
      duplicate: true,
      resumed: false,
    });
    expect(await code(baton.sendEvent('999999', 'ping', 3))).toBe('RUN_NOT_FOUND');
  });

  it('cancel stops a waiting run and its job; replay resumes a cancelled or dead-lettered run where it stopped; other states are 409', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    let declines = 1;
    const charged: number[] = [];
    baton.workflow('order', async (ctx) => {
      await ctx.step('reserve', () => charged.push(0));
      await ctx.step('charge', () => {
        if (declines-- > 0) throw new TerminalError('declined');
        charged.push(1);
      });
      return ctx.waitForEvent('shipped', 'shipped');
    });
    await baton.start();
    const { run } = await baton.startWorkflow('order');
    const dead = await runInState(baton, run.id, 'dead_lettered');
    expect(dead.steps.map((s) => [s.key, s.status])).toEqual([
      ['reserve', 'succeeded'],
      ['charge', 'failed'],
    ]);
    expect(await code(baton.workflows.cancelRun(run.id))).toBe('RUN_STATE_CONFLICT');
    const replayed = await baton.workflows.replayRun(run.id);
    expect(replayed.replayCount).toBe(1);
    await runInState(baton, run.id, 'waiting');
    expect(charged).toEqual([0, 1]);
    expect(await code(baton.workflows.replayRun(run.id))).toBe('RUN_STATE_CONFLICT');
    const cancelled = await baton.workflows.cancelRun(run.id);
    expect(cancelled.state).toBe('cancelled');
    expect((await jobOf(db, run.id)).state).toBe('cancelled');
    await expectCountersMatchRows(db);
    expect(await code(baton.workflows.cancelRun(run.id))).toBe('RUN_STATE_CONFLICT');
    await baton.workflows.replayRun(run.id);
    await runInState(baton, run.id, 'waiting');
    await baton.sendEvent(run.id, 'shipped', 'ok');
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toEqual({ name: 'shipped', payload: 'ok' });
    expect(done.replayCount).toBe(2);
    await expectCountersMatchRows(db);
    expect(charged).toEqual([0, 1]);
    expect(await code(baton.workflows.replayRun(run.id))).toBe('RUN_STATE_CONFLICT');
    expect(await code(baton.workflows.cancelRun(run.id))).toBe('RUN_STATE_CONFLICT');
    expect(await code(baton.workflows.getRun('x'))).toBe('INVALID_ARGUMENT');
    expect(await baton.workflows.getRun('424242')).toBeNull();
    expect(await code(baton.startWorkflow('nope'))).toBe('WORKFLOW_NOT_FOUND');
  });

  it('a run cancelled while a step runs: the step signal aborts at once, its job is cancelled, nothing after it runs', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    const inside = engines.gate();
    let second = 0;
    let aborted: unknown = null;
    baton.workflow('cancel-mid', async (ctx) => {
      await ctx.step('first', async (step) => {
        inside.resolve();
        await new Promise<void>((resolve) => step.signal.addEventListener('abort', () => resolve(), { once: true }));
        aborted = step.signal.reason;
        throw step.signal.reason;
      });
      await ctx.step('second', () => ++second);
    });
    await baton.start();
    const { run } = await baton.startWorkflow('cancel-mid');
    await inside.promise;
    await baton.workflows.cancelRun(run.id);
    await waitFor(() => aborted !== null, { message: 'the step to see its signal aborted' });
    expect((await jobOf(db, run.id)).state).toBe('cancelled');
    await waitFor(() => baton.stats().slots.default?.inFlight === 0, { message: 'the execution to end' });
    const detail = await baton.workflows.getRun(run.id);
    expect(detail?.state).toBe('cancelled');
    expect(detail?.steps.filter((s) => s.status === 'succeeded')).toEqual([]);
    expect(second).toBe(0);
    await expectCountersMatchRows(db);
  });

  it('a cancel from another process aborts the running step at the next heartbeat of its worker', async () => {
    const worker = engines.create({ queues: { default: 1 }, leaseMs: 3_000, heartbeatMs: 100 });
    const inside = engines.gate();
    let aborted = false;
    worker.workflow('cancel-far', async (ctx) => {
      await ctx.step('long', async (step) => {
        inside.resolve();
        await new Promise<void>((resolve) => step.signal.addEventListener('abort', () => resolve(), { once: true }));
        aborted = true;
      });
    });
    await worker.start();
    const { run } = await worker.startWorkflow('cancel-far');
    await inside.promise;
    const other = engines.producer();
    await other.workflows.cancelRun(run.id);
    await waitFor(() => aborted, { timeoutMs: 5_000, message: 'the remote cancel to abort the step' });
    expect((await worker.workflows.getRun(run.id))?.state).toBe('cancelled');
    expect((await jobOf(db, run.id)).state).toBe('cancelled');
  });
});
