// Retention of runs: a finished run leaves with its driving job (retention's delete, or the
// delete at success with deleteOnSuccess), its steps and events with it; a run still going keeps
// its finished children (it reads their outcomes when it resumes), and they leave with it.

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();
const count = async (table: string) => (await db.query(`SELECT count(*)::int AS n FROM baton.${table}`)).rows[0].n as number;

describe('workflow retention', () => {
  const engines = useWorkflowEngines(db);

  it('a finished run, its steps and events leave with its driving job; a waiting parent keeps its finished child', async () => {
    const baton = engines.create({
      queues: { default: 2 },
      retention: { succeededMs: 0, cancelledMs: 0, deadLetteredMs: 0 },
      retentionIntervalMs: 50,
    });
    baton.workflow('quick', async (ctx) => ctx.step('one', () => 1));
    baton.workflow('parent', async (ctx) => {
      await ctx.all('kids', [{ workflow: 'quick' }]);
      return ctx.waitForEvent('go', 'go');
    });
    await baton.start();
    const { run: solo } = await baton.startWorkflow('quick');
    await baton.sendEvent(solo.id, 'unused', null);
    const { run: parent } = await baton.startWorkflow('parent');
    await waitFor(async () => (await baton.workflows.getRun(solo.id)) === null, { message: 'the finished run to be removed' });
    expect(await count(`workflow_events WHERE run_id = ${Number(solo.id)}`)).toBe(0);
    expect(await count(`workflow_steps WHERE run_id = ${Number(solo.id)}`)).toBe(0);
    // The parent waits for its event; its child finished long ago and its job is purged, the run kept.
    await waitFor(async () => {
      const p = await baton.workflows.getRun(parent.id);
      return p?.state === 'waiting' && p.steps.some((s) => s.key === 'go' && s.status === 'waiting');
    });
    const child = (await baton.workflows.listRuns({ name: 'quick' }))[0]!;
    await waitFor(async () => (await db.query('SELECT 1 FROM baton.jobs WHERE id = $1', [child.jobId])).rowCount === 0, {
      message: "the child's driving job to be purged",
    });
    expect((await baton.workflows.getRun(child.id))?.state).toBe('succeeded');
    await baton.sendEvent(parent.id, 'go', 7);
    await waitFor(async () => (await baton.workflows.getRun(parent.id)) === null, { message: 'the parent to be removed' });
    expect(await baton.workflows.getRun(child.id)).toBeNull();
    expect(await count('workflow_runs')).toBe(0);
    expect(await count('workflow_steps')).toBe(0);
  });

  it('with retention off for a state, its runs stay', async () => {
    const baton = engines.create({
      queues: { default: 1 },
      retention: { succeededMs: null, cancelledMs: 0, deadLetteredMs: 0 },
      retentionIntervalMs: 50,
    });
    baton.workflow('kept', async (ctx) => ctx.step('one', () => 1));
    baton.workflow('waits', (ctx) => ctx.waitForEvent('never', 'never'));
    await baton.start();
    const { run } = await baton.startWorkflow('kept');
    await runInState(baton, run.id, 'succeeded');
    const { run: waiting } = await baton.startWorkflow('waits');
    await runInState(baton, waiting.id, 'waiting');
    await baton.workflows.cancelRun(waiting.id);
    await waitFor(async () => (await baton.workflows.getRun(waiting.id)) === null, { message: 'the cancelled run to be removed' });
    expect((await baton.workflows.getRun(run.id))?.state).toBe('succeeded');
  });
});
