// Starting a workflow by name from a process that does not define it: the registry of defined
// workflows (migration 0030) is written when a defining engine starts, a producer-only engine
// starts runs of it that the worker runs, a name no process registered is refused with nothing
// written, and a name whose workers are gone is still accepted (its run waits for one).

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isBatonError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { jobOf, runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();

async function code(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (err) {
    return isBatonError(err) ? err.code : String(err);
  }
  return undefined;
}

const registry = async () =>
  (
    await db.query<{ name: string; queue: string; max_attempts: number; first_seen_at: Date; last_seen_at: Date }>(
      'SELECT name, queue, max_attempts, first_seen_at, last_seen_at FROM baton.workflow_definitions ORDER BY name',
    )
  ).rows;

describe('start a workflow by name from anywhere', () => {
  const engines = useWorkflowEngines(db);

  it('a producer that defines no workflow starts a run that the defining worker runs on its queue', async () => {
    await db.query('TRUNCATE baton.workflow_definitions');
    const worker = engines.create({ queues: { mail: 1 } });
    worker.workflow<{ to: string }>(
      'greet',
      async (ctx) => {
        const body = await ctx.step('compose', () => `hello ${ctx.input.to}`);
        return { body };
      },
      { queue: 'mail', maxAttempts: 3 },
    );
    await worker.start();
    expect(await registry()).toMatchObject([{ name: 'greet', queue: 'mail', max_attempts: 3 }]);

    const producer = engines.producer();
    expect(producer.workflows.names()).toEqual([]);
    const { run, duplicate } = await producer.startWorkflow('greet', { to: 'ada' }, { idempotencyKey: 'g-1' });
    expect(duplicate).toBe(false);
    expect((await producer.startWorkflow('greet', { to: 'bob' }, { idempotencyKey: 'g-1' })).run.id).toBe(run.id);
    const done = await runInState(producer, run.id, 'succeeded');
    expect(done.output).toEqual({ body: 'hello ada' });
    expect(done.maxAttempts).toBe(3);
    const job = await db.query<{ queue: string; job_type: string }>('SELECT queue, job_type FROM baton.jobs WHERE id = $1', [
      (await jobOf(db, run.id)).id,
    ]);
    expect(job.rows[0]).toEqual({ queue: 'mail', job_type: 'workflow:greet' });
  });

  it('refuses a name no process ever registered with WORKFLOW_NOT_FOUND, writing no run', async () => {
    await db.query('TRUNCATE baton.workflow_definitions');
    const producer = engines.producer();
    expect(await code(producer.startWorkflow('gret', { to: 'ada' }))).toBe('WORKFLOW_NOT_FOUND');
    expect(await code(producer.startWorkflow('../bad name', {}))).toBe('WORKFLOW_NOT_FOUND');
    expect((await db.query('SELECT count(*)::int AS n FROM baton.workflow_runs')).rows[0].n).toBe(0);
    expect((await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE job_type LIKE 'workflow:%'`)).rows[0].n).toBe(0);
  });

  it('a workflow whose workers are gone is still accepted; its run waits on its queue until a defining worker starts', async () => {
    await db.query('TRUNCATE baton.workflow_definitions');
    const define = (b: ReturnType<typeof engines.create>) => b.workflow('later', (ctx) => ctx.step('s', () => 'ran'), { queue: 'later-q' });
    const first = engines.create({ queues: { 'later-q': 1 } });
    define(first);
    await first.start();
    const [seen] = await registry();
    await first.stop({ drainMs: 0 });

    const producer = engines.producer();
    const { run } = await producer.startWorkflow('later');
    expect((await producer.workflows.getRun(run.id))?.state).toBe('running');
    expect((await jobOf(db, run.id)).state).toBe('pending');

    const second = engines.create({ queues: { 'later-q': 1 } });
    define(second);
    await second.start();
    expect((await runInState(producer, run.id, 'succeeded')).output).toBe('ran');
    // A start refreshes the row: first seen stays, last seen moves on.
    const [again] = await registry();
    expect(again!.first_seen_at).toEqual(seen!.first_seen_at);
    expect(again!.last_seen_at.getTime()).toBeGreaterThan(seen!.last_seen_at.getTime());
  });

  it('a child run of a workflow defined only in another process is started there', async () => {
    await db.query('TRUNCATE baton.workflow_definitions');
    const leafWorker = engines.create({ queues: { leaves: 1 } });
    leafWorker.workflow<{ n: number }>('leaf', (ctx) => ctx.input.n * 10, { queue: 'leaves' });
    await leafWorker.start();
    const parentWorker = engines.create({ queues: { default: 1 } });
    parentWorker.workflow('fan', async (ctx) => (await ctx.all('kids', [{ workflow: 'leaf', input: { n: 4 } }])).map((c) => c.output));
    await parentWorker.start();
    const { run } = await parentWorker.startWorkflow('fan');
    expect((await runInState(parentWorker, run.id, 'succeeded')).output).toEqual([40]);
  });

  it('an input schema: the defining process refuses a bad input at start; a run started elsewhere dead-letters at once, saying why', async () => {
    await db.query('TRUNCATE baton.workflow_definitions');
    const worker = engines.create({ queues: { typed: 1 } });
    let ran = 0;
    worker.workflow<{ n: number }>(
      'typed',
      (ctx) => {
        ran++;
        return ctx.input.n + 1;
      },
      { queue: 'typed', input: z.object({ n: z.number() }) },
    );
    await worker.start();
    expect(await code(worker.startWorkflow('typed', { n: 'x' }))).toBe('INVALID_ARGUMENT');
    expect((await db.query('SELECT count(*)::int AS n FROM baton.workflow_runs')).rows[0].n).toBe(0);

    const producer = engines.producer();
    const bad = await producer.startWorkflow('typed', { n: 'x' });
    const dead = await runInState(producer, bad.run.id, 'dead_lettered');
    expect(dead.attempt).toBe(1);
    expect(dead.errors.at(-1)?.message).toContain('the input of workflow "typed" is invalid');
    const good = await producer.startWorkflow('typed', { n: 1 });
    expect((await runInState(producer, good.run.id, 'succeeded')).output).toBe(2);
    expect(ran).toBe(1);
    expect(() => worker.workflow('untyped', () => 1, { input: 'nope' as never })).toThrow(/must be a schema with parse/);
  });

  it('the input schema checks a run before its first step only: a run already under way is not dead-lettered by a schema tightened later', async () => {
    await db.query('TRUNCATE baton.workflow_definitions');
    const worker = engines.create({ queues: { tightened: 1 } });
    // Stands for a redeploy that tightens the schema while a run waits: it refuses every input once strict.
    let strict = false;
    const schema = {
      parse: (v: unknown) => {
        if (strict) throw new Error('tightened');
        return v;
      },
    };
    worker.workflow(
      'tightened',
      async (ctx) => {
        await ctx.step('charge', () => 'charged');
        const ev = await ctx.waitForEvent('go', 'go');
        return ev?.payload;
      },
      { queue: 'tightened', input: schema },
    );
    await worker.start();
    const { run } = await worker.startWorkflow('tightened', { n: 1 });
    await runInState(worker, run.id, 'waiting');
    strict = true;
    await worker.sendEvent(run.id, 'go', 'done');
    const done = await waitFor(
      async () => {
        const r = await worker.workflows.getRun(run.id);
        return r && (r.state === 'succeeded' || r.state === 'dead_lettered') ? r : null;
      },
      { message: 'the run to finish' },
    );
    expect(done.errors.map((e) => e.message)).toEqual([]);
    expect(done).toMatchObject({ state: 'succeeded', output: 'done' });
  });
});
