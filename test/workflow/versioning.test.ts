// Versioning end to end: ctx.patched() answers false to a run in flight whose history went past the
// patch under old code and true (recording a marker, so later executions agree) to a run that
// reaches it under new code; a code change without a patch blocks a run in flight with a
// queryable NON_DETERMINISM reason instead of dead-lettering it, and a replay after the fix
// resumes it, or a cancel ends it.

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { jobOf, runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();

describe('workflow versioning', () => {
  const engines = useWorkflowEngines(db);

  it('patched: false for a run that went past the patch under old code, true (and remembered) for runs under new code', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    let version = 1;
    baton.workflow('shipping', async (ctx) => {
      const path: string[] = [await ctx.step('reserve', () => 'reserved')];
      if (version === 2 && (await ctx.patched('fraud-check'))) path.push(await ctx.step('fraud-check', () => 'checked'));
      const go = await ctx.waitForEvent<string>('go', 'go');
      path.push(await ctx.step('ship', () => `shipped ${go?.payload}`));
      return path;
    });
    await baton.start();
    const old = await baton.startWorkflow('shipping');
    await runInState(baton, old.run.id, 'waiting');
    // Deploy: the new code runs every execution from now on.
    version = 2;
    const fresh = await baton.startWorkflow('shipping');
    const freshWaiting = await runInState(baton, fresh.run.id, 'waiting');
    expect(freshWaiting.steps.map((s) => [s.key, s.kind])).toEqual([
      ['reserve', 'step'],
      ['@patch:fraud-check', 'patch'],
      ['fraud-check', 'step'],
      ['go', 'event'],
    ]);
    await baton.sendEvent(old.run.id, 'go', 'old');
    await baton.sendEvent(fresh.run.id, 'go', 'new');
    const oldDone = await runInState(baton, old.run.id, 'succeeded');
    const freshDone = await runInState(baton, fresh.run.id, 'succeeded');
    expect(oldDone.output).toEqual(['reserved', 'shipped old']);
    expect(oldDone.steps.some((s) => s.kind === 'patch')).toBe(false);
    expect(freshDone.output).toEqual(['reserved', 'checked', 'shipped new']);
  });

  it('a change without a patch blocks a run in flight with NON_DETERMINISM; replay after the fix resumes it, cancel ends another', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    let renamed = false;
    baton.workflow('renaming', async (ctx) => {
      await ctx.step(renamed ? 'charge-card' : 'charge', () => 'charged');
      await ctx.waitForEvent('go', 'go');
      return ctx.step('ship', () => 'shipped');
    });
    await baton.start();
    const a = await baton.startWorkflow('renaming');
    const b = await baton.startWorkflow('renaming');
    await runInState(baton, a.run.id, 'waiting');
    await runInState(baton, b.run.id, 'waiting');
    renamed = true;
    await baton.sendEvent(a.run.id, 'go');
    await baton.sendEvent(b.run.id, 'go');
    const blocked = await runInState(baton, a.run.id, 'blocked');
    expect(blocked.blockedReason).toMatchObject({ code: 'NON_DETERMINISM', steps: ['charge-card', 'charge'] });
    expect(blocked.deadLetterReason).toBeNull();
    // The run blocks before its driving job's completion is written, and b blocks on its own time.
    await waitFor(async () => (await jobOf(db, a.run.id)).state === 'succeeded', { message: "a's driving job to complete" });
    await runInState(baton, b.run.id, 'blocked');
    expect((await baton.workflows.listRuns({ state: 'blocked' })).map((r) => r.id).sort()).toEqual([a.run.id, b.run.id].sort());
    expect((await baton.workflows.countRunsByState()).find((c) => c.state === 'blocked')?.n).toBe(2);
    // The operator deploys code that replays the history (here: the old name back), then resumes.
    renamed = false;
    await baton.workflows.replayRun(a.run.id);
    const done = await runInState(baton, a.run.id, 'succeeded');
    expect(done.output).toBe('shipped');
    expect(done.blockedReason).toBeNull();
    const cancelled = await baton.workflows.cancelRun(b.run.id);
    expect(cancelled.state).toBe('cancelled');
  });
});
