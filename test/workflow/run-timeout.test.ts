// A run bounded as a whole (runTimeoutMs): past its deadline a sleeping or waiting run ends
// timed_out (its driving job is due at the deadline, whatever its wake-up), a run whose worker
// died reads timed_out from the deadline on and is recorded so once the reaper gives its job
// back, a step output that arrives after the deadline is refused, a failure past it times the
// run out, a timed-out run cancels its children, and a parent sees its child timed out.

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { batonCode, expectCountersMatchRows, jobOf, runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();

const code = batonCode;

const storedState = async (runId: string) =>
  (await db.query<{ state: string }>('SELECT state FROM baton.workflow_runs WHERE id = $1', [runId])).rows[0]?.state;

/** Until the database clock is past the run's deadline. */
const pastDeadline = (runId: string) =>
  waitFor(
    async () =>
      (await db.query<{ past: boolean }>('SELECT deadline_at < now() AS past FROM baton.workflow_runs WHERE id = $1', [runId])).rows[0]
        ?.past === true,
    { timeoutMs: 10_000, message: `run ${runId} to pass its deadline` },
  );

describe('run timeout', () => {
  const engines = useWorkflowEngines(db);

  it("a sleeping run ends timed_out at the workflow's deadline, not at its wake-up; it takes no events and cannot be cancelled", async () => {
    const baton = engines.create({ queues: { default: 1 } });
    baton.workflow(
      'slow',
      async (ctx) => {
        await ctx.step('a', () => 1);
        await ctx.sleep('nap', 3_600_000);
        return ctx.step('b', () => 2);
      },
      { runTimeoutMs: 800 },
    );
    await baton.start();
    const { run } = await baton.startWorkflow('slow');
    expect(run.deadlineAt!.getTime() - run.createdAt.getTime()).toBe(800);
    const sleeping = await runInState(baton, run.id, 'sleeping');
    // The driving job is due at the deadline, not in an hour.
    expect((await jobOf(db, run.id)).run_at.getTime()).toBe(run.deadlineAt!.getTime());
    expect(sleeping.wakeAt!.getTime()).toBeGreaterThan(run.deadlineAt!.getTime());

    await waitFor(async () => (await storedState(run.id)) === 'timed_out', { message: 'the run to be recorded timed_out' });
    const done = await runInState(baton, run.id, 'timed_out');
    expect(done.finishedAt).toBeInstanceOf(Date);
    expect(done.steps.map((s) => [s.key, s.status])).toEqual([
      ['a', 'succeeded'],
      ['nap', 'waiting'],
    ]);
    await waitFor(async () => (await jobOf(db, run.id)).state === 'succeeded', { message: 'the driving job to finish' });
    expect(await code(baton.sendEvent(run.id, 'x', null))).toBe('RUN_STATE_CONFLICT');
    expect(await code(baton.workflows.cancelRun(run.id))).toBe('RUN_STATE_CONFLICT');
    expect((await baton.workflows.listRuns({ state: 'timed_out' })).map((r) => r.id)).toEqual([run.id]);
    expect((await baton.workflows.listRuns({ state: 'sleeping' })).map((r) => r.id)).toEqual([]);
    expect((await baton.workflows.countRunsByState()).filter((c) => c.state === 'timed_out')).toEqual([
      { name: 'slow', state: 'timed_out', n: 1 },
    ]);
    await expectCountersMatchRows(db);
  });

  it("a start's runTimeoutMs bounds a run waiting for an event that never comes", async () => {
    const baton = engines.create({ queues: { default: 1 } });
    baton.workflow('forever', (ctx) => ctx.waitForEvent('w', 'never'));
    await baton.start();
    const { run } = await baton.startWorkflow('forever', null, { runTimeoutMs: 600 });
    const unbounded = await baton.startWorkflow('forever');
    expect(unbounded.run.deadlineAt).toBeNull();
    await runInState(baton, run.id, 'waiting');
    await waitFor(async () => (await storedState(run.id)) === 'timed_out', { message: 'the run to be recorded timed_out' });
    expect((await baton.workflows.getRun(unbounded.run.id))?.state).toBe('waiting');
    await expect(code(baton.startWorkflow('forever', null, { runTimeoutMs: 0 }))).resolves.toBe('INVALID_ARGUMENT');
  });

  it('a run whose worker died reads timed_out from the deadline on, and is recorded so once the reaper gives its job back', async () => {
    const producer = engines.create({ queues: {}, reaper: false });
    producer.workflow('orphan', (ctx) => ctx.step('s', () => 1));
    await producer.start();
    const { run } = await producer.startWorkflow('orphan', null, { runTimeoutMs: 500 });
    const job = await jobOf(db, run.id);
    // Leased by a worker that died: its lease would last an hour.
    await db.query(
      `UPDATE baton.jobs SET state = 'running', attempt = 1, lease_owner = 'dead-worker', lease_token = 1,
         lease_expires_at = now() + interval '1 hour', started_at = now() WHERE id = $1`,
      [job.id],
    );
    await pastDeadline(run.id);
    expect((await producer.workflows.getRun(run.id))?.state).toBe('timed_out');
    expect((await producer.workflows.listRuns({ state: 'timed_out' })).map((r) => r.id)).toEqual([run.id]);
    expect(await producer.workflows.listRuns({ state: 'running' })).toEqual([]);
    expect((await producer.workflows.countRunsByState()).find((c) => c.state === 'timed_out')?.n).toBe(1);
    expect(await code(producer.sendEvent(run.id, 'x', null))).toBe('RUN_STATE_CONFLICT');
    expect(await storedState(run.id)).toBe('running');

    // The dead worker's lease runs out; a live worker's own reaper gives the job back and it claims it.
    await db.query(`UPDATE baton.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [job.id]);
    const ran: string[] = [];
    const worker = engines.create({ queues: { default: 1 }, reaperIntervalMs: 50 });
    worker.workflow('orphan', (ctx) => ctx.step('s', () => ran.push('s')));
    await worker.start();
    await waitFor(async () => (await storedState(run.id)) === 'timed_out', { message: 'the run to be recorded timed_out' });
    await waitFor(async () => (await jobOf(db, run.id)).state === 'succeeded', { message: 'the driving job to finish' });
    expect(ran).toEqual([]);
  });

  it('a step that finishes after the deadline is not recorded, and the run goes no further', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    const ran: string[] = [];
    let runId = '';
    baton.workflow(
      'fenced',
      async (ctx) => {
        await ctx.step('slow', async () => {
          await pastDeadline(runId);
          ran.push('slow');
          return 'late';
        });
        return ctx.step('next', () => ran.push('next'));
      },
      { runTimeoutMs: 400 },
    );
    await baton.start();
    runId = (await baton.startWorkflow('fenced')).run.id;
    await waitFor(async () => (await storedState(runId)) === 'timed_out', { message: 'the run to be recorded timed_out' });
    const run = await runInState(baton, runId, 'timed_out');
    expect(ran).toEqual(['slow']);
    expect(run.steps).toEqual([]);
    expect(run.output).toBeNull();
  });

  it("a running step's signal is aborted at the deadline, so a step that honours it stops then", async () => {
    const baton = engines.create({ queues: { default: 1 } });
    const reasons: string[] = [];
    baton.workflow(
      'stuck',
      (ctx) =>
        ctx.step(
          'forever',
          ({ signal }) =>
            new Promise((_, reject) =>
              signal.addEventListener('abort', () => {
                reasons.push(String((signal.reason as Error).message));
                reject(signal.reason);
              }),
            ),
        ),
      { runTimeoutMs: 500 },
    );
    await baton.start();
    const { run } = await baton.startWorkflow('stuck');
    await waitFor(async () => (await storedState(run.id)) === 'timed_out', { message: 'the run to be recorded timed_out' });
    await waitFor(async () => (await jobOf(db, run.id)).state === 'succeeded', { message: 'the driving job to finish' });
    expect(reasons).toEqual([`workflow run ${run.id} reached its deadline`]);
    expect((await baton.workflows.getRun(run.id))?.steps).toEqual([]);
  });

  it('a step that fails after the deadline ends the run timed_out, not dead-lettered on its last attempt', async () => {
    const baton = engines.create({ queues: { default: 1 } });
    let runId = '';
    baton.workflow(
      'failing',
      (ctx) =>
        ctx.step('late', async () => {
          await pastDeadline(runId);
          throw new Error('too late');
        }),
      { runTimeoutMs: 400, maxAttempts: 1 },
    );
    await baton.start();
    runId = (await baton.startWorkflow('failing')).run.id;
    await waitFor(async () => (await storedState(runId)) === 'timed_out', { message: 'the run to be recorded timed_out' });
    await waitFor(async () => (await jobOf(db, runId)).state === 'succeeded', { message: 'the driving job to finish' });
    expect((await baton.workflows.getRun(runId))?.state).toBe('timed_out');
    await expectCountersMatchRows(db);
  });

  it('a run recorded timed_out cancels its live child runs and the plain jobs it awaits that have not started', async () => {
    const baton = engines.create({ queues: { default: 2, slow: 1 } });
    baton.workflow('kid', (ctx) => ctx.sleep('z', 3_600_000));
    baton.workflow(
      'boss',
      (ctx) => ctx.all('kids', [{ workflow: 'kid' }, { job: { jobType: 'later', queue: 'slow', delayMs: 3_600_000 } }]),
      {
        runTimeoutMs: 800,
      },
    );
    await baton.start();
    const { run } = await baton.startWorkflow('boss');
    const kidId = await waitFor(
      async () =>
        (await db.query<{ id: string }>('SELECT id::text FROM baton.workflow_runs WHERE parent_run_id = $1', [run.id])).rows[0]?.id,
      { message: 'the child run' },
    );
    await waitFor(async () => (await storedState(run.id)) === 'timed_out', { message: 'the run to be recorded timed_out' });
    expect(await storedState(kidId)).toBe('cancelled');
    expect((await jobOf(db, kidId)).state).toBe('cancelled');
    const plain = await db.query<{ state: string }>(`SELECT state FROM baton.jobs WHERE job_type = 'later'`);
    expect(plain.rows.map((r) => r.state)).toEqual(['cancelled']);
    await expectCountersMatchRows(db);
  });

  it('a parent waiting for a child that times out sees it timed out', async () => {
    const baton = engines.create({ queues: { default: 2 } });
    baton.workflow('child', (ctx) => ctx.sleep('z', 3_600_000), { runTimeoutMs: 500 });
    baton.workflow('parent', async (ctx) => {
      const [c] = await ctx.all('kids', [{ workflow: 'child' }]);
      return c?.state;
    });
    await baton.start();
    const { run } = await baton.startWorkflow('parent');
    const done = await runInState(baton, run.id, 'succeeded');
    expect(done.output).toBe('timed_out');
  });
});
