// Fan-out/fan-in with ctx.all: a parent starts child runs once, waits for all of them
// without holding a worker, and resumes with each child's output or failure in order;
// cancelling the parent cancels its live children.

import { describe, expect, it } from 'vitest';
import { TerminalError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { expectCountersMatchRows, jobOf, runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();

describe('child runs', () => {
  const engines = useWorkflowEngines(db);

  it('the parent waits for every child, holding no slot, and sees their outputs and failures in order', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    const gate = engines.gate();
    let started = 0;
    baton.workflow<{ n: number }>('child', async (ctx) => {
      return ctx.step('work', async () => {
        if (ctx.input.n === 2) throw new TerminalError('no two');
        if (ctx.input.n === 3) await gate.promise;
        return ctx.input.n * 10;
      });
    });
    baton.workflow('parent', async (ctx) => {
      await ctx.step('before', () => ++started);
      const results = await ctx.all<number>(
        'fan',
        [1, 2, 3].map((n) => ({ workflow: 'child', input: { n } })),
      );
      return results.map((r) => [r.state, r.output, r.error?.message ?? null]);
    });
    await baton.start();
    const { run } = await baton.startWorkflow('parent');
    const waiting = await runInState(baton, run.id, 'waiting');
    expect(waiting.steps.map((s) => [s.key, s.kind, s.status])).toEqual([
      ['before', 'step', 'succeeded'],
      ['fan', 'step', 'succeeded'],
      ['fan:join', 'children', 'waiting'],
    ]);
    const children = (await baton.workflows.listRuns({ name: 'child' })).map((r) => r.id);
    expect(children).toHaveLength(3);
    // Child 3 holds one slot; the waiting parent holds none. Read as one condition once children 1
    // and 2 are over: until then their handlers may still hold slots, and each one that finishes
    // wakes the parent, which runs (in a slot) and suspends again. A parent that kept its slot
    // while waiting would keep the count at 2 (and, with 2 slots, starve the children).
    await waitFor(
      async () => {
        const kids = await Promise.all(children.map((id) => baton.workflows.getRun(id)));
        const over = kids.filter((k) => k?.state === 'succeeded' || k?.state === 'dead_lettered').length;
        return over === 2 && (await jobOf(db, run.id)).state === 'pending' && baton.stats().slots.default?.inFlight === 1;
      },
      { message: 'children 1 and 2 over, the parent waiting (job pending), child 3 in the only slot in use' },
    );
    gate.resolve();
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toEqual([
      ['succeeded', 10, null],
      ['dead_lettered', null, 'step "work" failed: no two'],
      ['succeeded', 30, null],
    ]);
    expect(started).toBe(1);
    expect(await baton.workflows.listRuns({ name: 'child' })).toHaveLength(3);
  });

  it('cancelling the parent cancels its live children', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    baton.workflow('sleeper', (ctx) => ctx.waitForEvent('never', 'never'));
    baton.workflow('parent', (ctx) => ctx.all('fan', [{ workflow: 'sleeper' }, { workflow: 'sleeper' }]));
    await baton.start();
    const { run } = await baton.startWorkflow('parent');
    await runInState(baton, run.id, 'waiting');
    const kids = await waitFor(async () => {
      const runs = await baton.workflows.listRuns({ name: 'sleeper', state: 'waiting' });
      return runs.length === 2 ? runs : null;
    });
    await baton.workflows.cancelRun(run.id);
    for (const k of kids) {
      expect((await baton.workflows.getRun(k.id))?.state).toBe('cancelled');
      expect((await jobOf(db, k.id)).state).toBe('cancelled');
    }
    await expectCountersMatchRows(db);
  });

  it('cancelling a run cancels its descendants at every level and the plain jobs they await', async () => {
    const baton = engines.create({ queues: { default: 3 } });
    baton.workflow('leaf', (ctx) => ctx.waitForEvent('never', 'never'));
    baton.workflow('middle', (ctx) => ctx.all('fan', [{ workflow: 'leaf' }, { job: { jobType: 'later', queue: 'elsewhere' } }]));
    baton.workflow('top', (ctx) => ctx.all('fan', [{ workflow: 'middle' }]));
    await baton.start();
    const { run } = await baton.startWorkflow('top');
    const leaf = await waitFor(async () => (await baton.workflows.listRuns({ name: 'leaf', state: 'waiting' }))[0]);
    const middle = (await baton.workflows.listRuns({ name: 'middle' }))[0]!;
    await runInState(baton, middle.id, 'waiting');
    const plain = (await db.query(`SELECT id::text FROM baton.jobs WHERE job_type = 'later'`)).rows[0].id as string;
    await baton.workflows.cancelRun(run.id);
    for (const id of [run.id, middle.id, leaf.id]) {
      expect((await baton.workflows.getRun(id))?.state).toBe('cancelled');
      expect((await jobOf(db, id)).state).toBe('cancelled');
    }
    expect((await baton.admin.getJob(plain)).state).toBe('cancelled');
    await expectCountersMatchRows(db);
  });

  it('a run awaits plain jobs without a worker and resumes when the last finishes (not at its 30 s poll)', async () => {
    const gate = engines.gate();
    const baton = engines.create({
      queues: { default: 2, jobs: 2 },
      handlers: {
        double: async (ctx) => {
          await gate.promise;
          return (ctx.payload as number) * 2;
        },
        refuse: async () => {
          throw new TerminalError('refused');
        },
      },
    });
    baton.workflow('await-jobs', async (ctx) => {
      const r = await ctx.all<number>('jobs', [
        { job: { jobType: 'double', queue: 'jobs', payload: 21 } },
        { job: { jobType: 'refuse', queue: 'jobs' } },
      ]);
      return r.map((x) => [x.runId, x.jobId !== null, x.state, x.output, x.error?.message ?? null]);
    });
    await baton.start();
    const { run } = await baton.startWorkflow('await-jobs');
    await runInState(baton, run.id, 'waiting');
    await waitFor(async () => (await jobOf(db, run.id)).state === 'pending');
    gate.resolve();
    const done = await runInState(baton, run.id, 'succeeded', 10_000);
    expect(done.output).toEqual([
      [null, true, 'succeeded', 42, null],
      [null, true, 'dead_lettered', null, 'refused'],
    ]);
  });
});
