// Parallel steps end to end: steps started together run concurrently and are memoized by key;
// after a crash (the driving job's lease expires under a hung execution and the reaper hands the
// run to another worker) only the unfinished steps run again, and step.attempt counts the crashed
// execution; a sibling's output is committed when another step throws; a key in flight twice is
// refused; sleeps and event waits parked together suspend the run until the right one is over.

import { describe, expect, it } from 'vitest';
import type { Baton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { expireLease, runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();

/** The hung execution's lease runs out, as when its process is killed: the reaper of `rescuer` takes the job back. */
const crash = (runId: string) => expireLease(db, runId);

describe('parallel workflow steps', () => {
  const engines = useWorkflowEngines(db);
  // A worker that never heartbeats during a test and never reaps: its execution hangs until crash().
  const hung = () => engines.create({ queues: { default: 1 }, leaseMs: 120_000, heartbeatMs: 60_000, reaper: false, leader: false });
  const rescuer = () => engines.create({ queues: { default: 2 }, reaperIntervalMs: 50 });

  it('steps started together run concurrently; after a crash only the unfinished one runs again, at attempt 2', async () => {
    const calls = { a: 0, b: 0, c: 0 };
    const attempts: number[] = [];
    const bothStarted = engines.gate();
    const bInside = engines.gate();
    const never = engines.gate();
    const define = (baton: Baton) =>
      baton.workflow('fan', async (ctx) => {
        const [a, b, c] = await Promise.all([
          ctx.step('a', async () => {
            calls.a++;
            await bothStarted.promise;
            return 'A';
          }),
          ctx.step('b', async (s) => {
            calls.b++;
            attempts.push(s.attempt);
            bothStarted.resolve();
            if (s.attempt === 1) {
              bInside.resolve();
              await never.promise;
            }
            return `B${s.attempt}`;
          }),
          ctx.step('c', () => ++calls.c),
        ]);
        return [a, b, c];
      });
    const first = hung();
    define(first);
    await first.start();
    const { run } = await first.startWorkflow('fan');
    await bInside.promise;
    await waitFor(async () => (await first.workflows.getRun(run.id))?.steps.length === 2, { message: 'a and c committed' });
    await crash(run.id);
    const second = rescuer();
    define(second);
    await second.start();
    const done = await runInState(second, run.id, 'succeeded');
    expect(done.output).toEqual(['A', 'B2', 1]);
    expect(calls).toEqual({ a: 1, b: 2, c: 1 });
    expect(attempts).toEqual([1, 2]);
    expect(done.steps.map((s) => [s.key, s.status, s.seq]).sort()).toEqual([
      ['a', 'succeeded', 0],
      ['b', 'succeeded', 1],
      ['c', 'succeeded', 2],
    ]);
    // The hung execution's late commit is fenced: nothing of it lands.
    never.resolve();
    await waitFor(() => first.stats().slots.default?.inFlight === 0, { message: 'the hung execution to end' });
    expect((await second.workflows.getRun(run.id))?.steps.find((s) => s.key === 'b')?.output).toBe('B2');
  });

  it('step.attempt counts a crashed execution of a sequential step, and only of the step it crashed in', async () => {
    const seen: Array<[string, number]> = [];
    const inside = engines.gate();
    const never = engines.gate();
    const define = (baton: Baton) =>
      baton.workflow('seq-crash', async (ctx) => {
        await ctx.step('before', (s) => seen.push(['before', s.attempt]));
        await ctx.step('x', async (s) => {
          seen.push(['x', s.attempt]);
          if (s.attempt === 1) {
            inside.resolve();
            await never.promise;
          }
        });
        await ctx.step('after', (s) => seen.push(['after', s.attempt]));
      });
    const first = hung();
    define(first);
    await first.start();
    const { run } = await first.startWorkflow('seq-crash');
    await inside.promise;
    await crash(run.id);
    const second = rescuer();
    define(second);
    await second.start();
    await runInState(second, run.id, 'succeeded');
    expect(seen).toEqual([
      ['before', 1],
      ['x', 1],
      ['x', 2],
      ['after', 1],
    ]);
  });

  it('step.attempt: a step called after a wait found over in the execution after a crash does not count the crash', async () => {
    const seen: Array<[string, number]> = [];
    const inside = engines.gate();
    const never = engines.gate();
    const define = (baton: Baton) =>
      baton.workflow('nap-crash', async (ctx) => {
        await Promise.all([
          (async () => {
            await ctx.sleep('nap', 300);
            await ctx.step('after-nap', (s) => seen.push(['after-nap', s.attempt]));
          })(),
          ctx.step('hang', async (s) => {
            seen.push(['hang', s.attempt]);
            if (s.attempt === 1) {
              inside.resolve();
              await never.promise;
            }
          }),
        ]);
      });
    const first = hung();
    define(first);
    await first.start();
    const { run } = await first.startWorkflow('nap-crash');
    await inside.promise;
    // The nap is over before the crash: the next execution finds it over, then calls after-nap.
    await waitFor(async () => {
      const r = await db.query(`SELECT wake_at <= now() AS over FROM baton.workflow_steps WHERE run_id = $1 AND name = 'nap'`, [run.id]);
      return r.rows[0]?.over === true;
    });
    await crash(run.id);
    const second = rescuer();
    define(second);
    await second.start();
    await runInState(second, run.id, 'succeeded');
    expect(seen.sort()).toEqual([
      ['after-nap', 1],
      ['hang', 1],
      ['hang', 2],
    ]);
    never.resolve();
  });

  it('a step that throws while a sibling runs: the sibling’s output is committed and not run again by the retry', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    const calls = { slow: 0, flaky: 0 };
    const flakyThrew = engines.gate();
    baton.workflow('sibling-fails', async (ctx) => {
      const [slow, flaky] = await Promise.all([
        ctx.step('slow', async () => {
          calls.slow++;
          await flakyThrew.promise;
          return 'slow';
        }),
        ctx.step('flaky', (s) => {
          calls.flaky++;
          if (s.attempt === 1) {
            setImmediate(() => flakyThrew.resolve());
            throw new Error('flaky once');
          }
          return `flaky ${s.attempt}`;
        }),
      ]);
      return [slow, flaky];
    });
    await baton.start();
    const { run } = await baton.startWorkflow('sibling-fails');
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toEqual(['slow', 'flaky 2']);
    expect(calls).toEqual({ slow: 1, flaky: 2 });
    expect(done.errors.map((e) => e.message)).toEqual(['step "flaky" failed: flaky once']);
  });

  it('a key used by two steps in flight at once is refused with a clear error', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    baton.workflow('dup', async (ctx) => {
      await Promise.all([ctx.step('same', () => 1), ctx.step('same', () => 2)]);
    });
    await baton.start();
    const { run } = await baton.startWorkflow('dup');
    const dead = await runInState(baton, run.id, 'dead_lettered');
    expect(dead.errors.at(-1)?.message).toContain('step "same" was called while a step of the same name was still running');
  });

  it('sleeps and event waits parked together: the run wakes for each as it is over, and ends with all of them', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    let executions = 0;
    baton.workflow('waits-together', async (ctx) => {
      executions++;
      const [one, two, , side] = await Promise.all([
        ctx.waitForEvent<number>('one', 'one'),
        ctx.waitForEvent<number>('two', 'two'),
        ctx.sleep('nap', 100),
        ctx.step('side', () => 'side'),
      ]);
      return [one?.payload, two?.payload, side];
    });
    await baton.start();
    const { run } = await baton.startWorkflow('waits-together');
    const waiting = await runInState(baton, run.id, 'waiting');
    expect(waiting.steps.find((s) => s.key === 'side')?.status).toBe('succeeded');
    // The nap is over first: the run wakes for it and parks again on the two events. An event
    // sent while that execution runs wakes nothing (the execution takes it), so the event is
    // sent only once the run is parked again, however long the machine took to get there.
    await waitFor(
      async () => {
        const r = await baton.workflows.getRun(run.id);
        return r?.state === 'waiting' && r.steps.find((s) => s.key === 'nap')?.status === 'succeeded';
      },
      { message: 'the run to wake for its nap and park again on the events' },
    );
    // The second event wakes the run though the run's wait_event names the first.
    const sent = await baton.sendEvent(run.id, 'two', 2);
    expect(sent.resumed).toBe(true);
    await waitFor(async () => (await baton.workflows.getRun(run.id))?.steps.find((s) => s.key === 'two')?.status === 'succeeded', {
      message: 'event two consumed',
    });
    await runInState(baton, run.id, 'waiting');
    await baton.sendEvent(run.id, 'one', 1);
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toEqual([1, 2, 'side']);
    expect(done.steps.every((s) => s.status === 'succeeded')).toBe(true);
    expect(executions).toBeGreaterThanOrEqual(3);
  });

  it('a race of an event wait and a sleep: the run suspends on both and goes on with whichever is over first', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    baton.workflow('race', async (ctx) => {
      const winner = await Promise.race([
        ctx.waitForEvent<string>('answer', 'answer').then((e) => `event ${e?.payload}`),
        ctx.sleep('deadline', (ctx.input as { ms: number }).ms).then(() => 'deadline'),
      ]);
      return ctx.step('after', () => winner);
    });
    await baton.start();
    const timed = await baton.startWorkflow('race', { ms: 300 });
    const answered = await baton.startWorkflow('race', { ms: 600_000 });
    const waiting = await runInState(baton, answered.run.id, 'waiting');
    expect(waiting.steps.map((s) => [s.key, s.status])).toEqual([
      ['answer', 'waiting'],
      ['deadline', 'waiting'],
    ]);
    // The run wakes at the earlier of its waits: here only the event can end it in time.
    expect(waiting.wakeAt && waiting.wakeAt.getTime() - Date.now()).toBeGreaterThan(60_000);
    await baton.sendEvent(answered.run.id, 'answer', 'yes');
    expect((await runInState(baton, answered.run.id, 'succeeded')).output).toBe('event yes');
    expect((await runInState(baton, timed.run.id, 'succeeded')).output).toBe('deadline');
  });
});
