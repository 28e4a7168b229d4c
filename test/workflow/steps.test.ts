// Durable steps end to end through createBaton: outputs committed in order, a retried
// run resumes at the failed step (completed steps run once), executions see committed
// (jsonb-normalised) values, non-determinism blocks the run naming the steps, and a step
// write from a driving job whose lease was taken over is refused.

import { describe, expect, it } from 'vitest';
import { TerminalError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { jobOf, runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();

describe('workflow steps', () => {
  const engines = useWorkflowEngines(db);

  it('runs steps in order, each output available to the next, and records them', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    const order: string[] = [];
    baton.workflow<{ n: number }>('order', async (ctx) => {
      const a = await ctx.step('a', () => {
        order.push('a');
        return { n: ctx.input.n + 1 };
      });
      const b = await ctx.step('b', () => {
        order.push('b');
        return a.n * 2;
      });
      return { a, b };
    });
    await baton.start();
    const { run, duplicate } = await baton.startWorkflow('order', { n: 1 }, { idempotencyKey: 'k1' });
    expect(duplicate).toBe(false);
    const again = await baton.startWorkflow('order', { n: 99 }, { idempotencyKey: 'k1' });
    expect(again).toMatchObject({ duplicate: true, run: { id: run.id } });
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toEqual({ a: { n: 2 }, b: 4 });
    expect(done.progress).toBe(2);
    expect(done.steps.map((s) => [s.key, s.kind, s.status, s.attempts, s.seq])).toEqual([
      ['a', 'step', 'succeeded', 1, 0],
      ['b', 'step', 'succeeded', 1, 1],
    ]);
    expect(order).toEqual(['a', 'b']);
    // The run is marked succeeded by the execution's last statement; the driving job's own
    // outcome is written after it by the completer, in its next batch.
    await waitFor(async () => (await jobOf(db, run.id)).state === 'succeeded', { message: `run ${run.id}'s driving job to succeed` });
    expect(baton.stats().workflows.stepsExecuted).toBe(2);
  });

  it('a step reports progress for its driving job (step.progress), stored as the job’s progress', async () => {
    const baton = engines.create({ queues: { default: 1 }, heartbeatMs: 50 });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    baton.workflow('reporting', async (ctx) => {
      await ctx.step('load', async (s) => {
        s.progress({ step: 'load', percent: 50 });
        await released;
      });
      return 'done';
    });
    await baton.start();
    const { run } = await baton.startWorkflow('reporting', {});
    const progress = await waitFor(
      async () =>
        (
          await db.query<{ progress: unknown }>(
            'SELECT j.progress FROM baton.jobs j JOIN baton.workflow_runs r ON r.job_id = j.id WHERE r.id = $1',
            [run.id],
          )
        ).rows[0]?.progress,
      { message: 'the step’s report on the driving job' },
    );
    expect(progress).toEqual({ step: 'load', percent: 50 });
    release();
    await runInState(baton, run.id, 'succeeded');
  });

  it('a retried run resumes at the failed step: completed steps run exactly once, the failure chain names the step', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    const calls = { a: 0, b: 0, c: 0 };
    baton.workflow('retry', async (ctx) => {
      await ctx.step('a', () => ++calls.a);
      const b = await ctx.step('b', (s) => {
        calls.b++;
        if (s.attempt < 3) throw new Error(`flaky ${s.attempt}`);
        return `b after ${s.attempt}`;
      });
      return ctx.step('c', () => {
        calls.c++;
        return b;
      });
    });
    await baton.start();
    const { run } = await baton.startWorkflow('retry');
    const done = await runInState(baton, run.id, 'succeeded');
    expect(calls).toEqual({ a: 1, b: 3, c: 1 });
    expect(done.output).toBe('b after 3');
    expect(done.steps.map((s) => [s.key, s.attempts])).toEqual([
      ['a', 1],
      ['b', 3],
      ['c', 1],
    ]);
    expect(done.errors.map((e) => e.message)).toEqual(['step "b" failed: flaky 1', 'step "b" failed: flaky 2']);
    expect(baton.stats().workflows.stepReplaysAvoided).toBe(2);
  });

  it('executions see the committed, jsonb-normalised output, never a recomputed one; repeated keys are occurrences', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    const seen: unknown[] = [];
    let computed = 0;
    let failOnce = true;
    baton.workflow('normalise', async (ctx) => {
      const v = await ctx.step('v', () => ({ when: new Date(0), gone: undefined, n: ++computed, z: 1, a: [1, 'x'] }));
      seen.push(v);
      const loop: number[] = [];
      for (let i = 0; i < 3; i++) loop.push(await ctx.step('tick', () => i * 10));
      await ctx.step('fail-once', () => {
        if (failOnce) {
          failOnce = false;
          throw new Error('once');
        }
      });
      return loop;
    });
    await baton.start();
    const { run } = await baton.startWorkflow('normalise');
    const done = await runInState(baton, run.id, 'succeeded');
    const stored = { a: [1, 'x'], n: 1, z: 1, when: '1970-01-01T00:00:00.000Z' };
    expect(seen).toEqual([stored, stored]);
    expect(computed).toBe(1);
    expect(done.output).toEqual([0, 10, 20]);
    expect(done.steps.map((s) => s.key)).toEqual(['v', 'tick', 'tick#2', 'tick#3', 'fail-once']);
  });

  it('the builder form runs its steps in order, each reading earlier outputs with requireOutputOf', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    let charges = 0;
    baton
      .workflow<{ sku: string }>('built')
      .step('reserve', (ctx) => ({ sku: ctx.input.sku, key: ctx.idempotencyKey }))
      .step('charge', (ctx) => {
        charges++;
        if (charges === 1) throw new Error('flaky');
        return { reserved: ctx.requireOutputOf<{ sku: string }>('reserve').sku };
      })
      .step('early', (ctx) => ctx.requireOutputOf('later'))
      .step('later', () => 'never reached');
    await baton.start();
    const { run } = await baton.startWorkflow('built', { sku: 'A1' });
    const dead = await runInState(baton, run.id, 'dead_lettered');
    expect(charges).toBe(2);
    expect(dead.steps.map((s) => [s.key, s.status])).toEqual([
      ['reserve', 'succeeded'],
      ['charge', 'succeeded'],
      ['early', 'failed'],
    ]);
    expect(dead.steps[0]?.output).toEqual({ sku: 'A1', key: `${run.id}:reserve` });
    expect(dead.steps[1]?.output).toEqual({ reserved: 'A1' });
    expect(dead.errors.at(-1)?.message).toContain('requires the output of "later"');
  });

  it('TerminalError in a step dead-letters the run at once; a code change under a run blocks it, naming the steps', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    let version = 1;
    baton.workflow('evolving', async (ctx) => {
      if (version === 2) await ctx.step('inserted', () => 'new');
      await ctx.step('a', () => 'a');
      await ctx.step('b', () => {
        if (version === 1) {
          version = 2;
          throw new Error('transient');
        }
        return 'b';
      });
    });
    baton.workflow('terminal', async (ctx) => {
      await ctx.step('x', () => {
        throw new TerminalError('card declined');
      });
    });
    await baton.start();
    const evolving = await baton.startWorkflow('evolving');
    const terminal = await baton.startWorkflow('terminal');
    const blocked = await runInState(baton, evolving.run.id, 'blocked');
    expect(blocked.blockedReason).toMatchObject({ code: 'NON_DETERMINISM', steps: ['inserted', 'a'] });
    expect(blocked.blockedReason?.message).toContain('reached "inserted", which its history does not hold, and went past step "a"');
    expect(blocked.steps.map((s) => [s.key, s.status])).toEqual([
      ['a', 'succeeded'],
      ['b', 'failed'],
    ]);
    const declined = await runInState(baton, terminal.run.id, 'dead_lettered');
    expect(declined.errors.map((e) => e.message)).toEqual(['step "x" failed: card declined']);
    expect(declined.steps.map((s) => [s.key, s.status])).toEqual([['x', 'failed']]);
  });

  it('a step write from a driving job whose lease was taken over is refused, and nothing of it is stored', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    const inside = engines.gate();
    const release = engines.gate();
    let after = 0;
    baton.workflow('stale', async (ctx) => {
      await ctx.step('first', () => 1);
      await ctx.step('slow', async () => {
        inside.resolve();
        await release.promise;
        return 'from the stale lease';
      });
      after++;
    });
    const fenced: string[] = [];
    baton.events.on('fenced', (e) => fenced.push(e.kind));
    await baton.start();
    const { run } = await baton.startWorkflow('stale');
    await inside.promise;
    // Another worker's claim, as the reaper would allow it: a new token on the same job.
    const job = await jobOf(db, run.id);
    await db.query(`UPDATE baton.jobs SET lease_token = nextval('baton.lease_token_seq') WHERE id = $1`, [job.id]);
    release.resolve();
    await waitFor(() => fenced.includes('fail'), { message: 'the stale failure write to be fenced' });
    const detail = await baton.workflows.getRun(run.id);
    expect(detail?.steps.map((s) => [s.key, s.status])).toEqual([['first', 'succeeded']]);
    expect(detail?.progress).toBe(1);
    expect(after).toBe(0);
  });
});
