// Retries end to end through createBaton: transient errors retry until the attempt
// budget is spent, TerminalError (also as a cause) dead-letters at once, an
// unknown job type is retried; a delayed job waits for its run_at. Neither an event
// listener that throws nor a thrown value that cannot be read changes an outcome.
// Asserted on the jobs row and its error history.

import { describe, expect, it } from 'vitest';
import { TerminalError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { deferred, waitFor, withTimeout } from '../helpers/wait.ts';
import { Invocations, row, rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();

describe.each([true, false])('retries and delays (claimIntoRunning=%s)', (claimIntoRunning) => {
  // A retried job becomes due after its backoff; the poll timer is what claims it again.
  const engines = useEngines(db, () => ({ claimIntoRunning, backoffBaseMs: 1, backoffCapMs: 5, pollIntervalMs: 100 }));

  it('a handler may return a value, a promise, a thenable or nothing; a result jsonb cannot hold is a terminal failure', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const baton = await engines.start({
      queues: { q: 4 },
      handlers: {
        plain: () => ({ shape: 'plain' }),
        promise: async () => ({ shape: 'promise' }),
        // biome-ignore lint/suspicious/noThenProperty: a foreign thenable is exactly what this handler must return.
        thenable: () => ({ then: (resolve: (v: unknown) => void) => resolve({ shape: 'thenable' }) }),
        nothing: () => undefined,
        syncThrow: () => {
          throw new TerminalError('sync throw');
        },
        cyclic: () => cyclic,
        nul: () => ({ text: 'a\u0000b' }),
      },
    });
    const enqueue = async (jobType: string) => (await baton.enqueue({ jobType, queue: 'q', maxAttempts: 2 })).job.id;
    const ids = Object.fromEntries(
      await Promise.all(['plain', 'promise', 'thenable', 'nothing', 'syncThrow', 'cyclic', 'nul'].map(async (t) => [t, await enqueue(t)])),
    ) as Record<string, string>;

    for (const shape of ['plain', 'promise', 'thenable'])
      expect((await rowInState(db, ids[shape]!, 'succeeded')).result).toEqual({ shape });
    expect((await rowInState(db, ids.nothing!, 'succeeded')).result).toBeNull();
    const thrown = await rowInState(db, ids.syncThrow!, 'dead_lettered');
    expect(thrown.errors.map((e) => [e.kind, e.message])).toEqual([['terminal', 'sync throw']]);
    for (const t of ['cyclic', 'nul']) {
      const r = await rowInState(db, ids[t]!, 'dead_lettered');
      expect(r).toMatchObject({ attempt: 1, dead_letter_reason: 'terminal_error', result: null });
      expect(r.errors[0]!.kind).toBe('terminal');
    }
  });

  it("event listeners that throw change nothing: every job runs and is written, the other listeners still hear, each throw is an 'error'", async () => {
    const calls = new Invocations();
    let flaky = 0;
    const worker = engines.create({
      queues: { q: 5 },
      handlers: {
        work: (ctx) => calls.record(ctx),
        // Fails its first attempt (a 'retried' event), succeeds on the second.
        flaky: () => {
          if (flaky++ === 0) throw new Error('first attempt fails');
        },
        doomed: () => {
          throw new TerminalError('no');
        },
      },
    });
    const events = ['enqueued', 'claimed', 'started', 'succeeded', 'retried', 'deadLettered'] as const;
    const heard = new Map<string, number>();
    for (const event of events) {
      worker.events.on(event, () => {
        throw new Error(`a ${event} listener that throws`);
      });
      // Registered after the throwing one: still called.
      worker.events.on(event, () => heard.set(event, (heard.get(event) ?? 0) + 1));
    }
    const reported = new Map<string, number>();
    worker.events.on('error', ({ where }) => {
      reported.set(where, (reported.get(where) ?? 0) + 1);
      throw new Error('an error listener that throws');
    });
    await worker.start();
    // The insert committed, so enqueue resolves despite its listener, and the job is claimable.
    const results = await worker.enqueueMany([
      ...[1, 2, 3].map((n) => ({ jobType: 'work', queue: 'q', payload: { n } })),
      { jobType: 'flaky', queue: 'q', maxAttempts: 2 },
      { jobType: 'doomed', queue: 'q' },
    ]);
    expect(results.every((r) => r.created)).toBe(true);
    const [w1, w2, w3, f, d] = results.map((r) => r.job.id);
    for (const id of [w1!, w2!, w3!, f!]) await rowInState(db, id, 'succeeded');
    expect((await rowInState(db, d!, 'dead_lettered')).attempt).toBe(1);
    expect([w1!, w2!, w3!].map((id) => calls.of(id))).toEqual([1, 1, 1]);
    expect(flaky).toBe(2);
    // The events follow the rows' writes: wait for the last of them.
    await waitFor(() => heard.get('succeeded') === 4 && heard.get('retried') === 1 && heard.get('deadLettered') === 1, {
      message: 'the second listeners to hear every outcome',
    });
    expect(worker.stats().slots.q!.inFlight).toBe(0);

    expect(Object.fromEntries(heard)).toMatchObject({ enqueued: 1, started: 6, succeeded: 4, retried: 1, deadLettered: 1 });
    expect(heard.get('claimed')).toBeGreaterThanOrEqual(2);
    // Every throw was reported once as an 'error', and the runner never failed.
    for (const event of events) expect(reported.get(`listener:${event}`), event).toBe(heard.get(event));
    expect(reported.get('runner')).toBeUndefined();
    expect(worker.stats()).toMatchObject({ succeeded: 4, retried: 1, deadLettered: 1 });
  });

  it('a handler that throws a value nothing can read is a failed attempt, recorded with a placeholder', async () => {
    const baton = await engines.start({
      queues: { q: 1 },
      handlers: {
        unreadable: () => {
          // No prototype (so no toString) and a toJSON that throws.
          throw Object.assign(Object.create(null) as object, {
            toJSON() {
              throw new Error('toJSON');
            },
          });
        },
      },
    });
    const { job } = await baton.enqueue({ jobType: 'unreadable', queue: 'q', maxAttempts: 2 });
    const r = await rowInState(db, job.id, 'dead_lettered');
    expect(r.attempt).toBe(2);
    expect(r.errors.map((e) => [e.kind, e.name, e.message])).toEqual([
      ['transient', 'NonError', '[a thrown value that could not be read]'],
      ['transient', 'NonError', '[a thrown value that could not be read]'],
    ]);
  });

  it('a plain Error retries until maxAttempts, then dead-letters with one error entry per attempt', async () => {
    const calls = new Invocations();
    const baton = await engines.start({
      queues: { q: 2 },
      handlers: {
        flaky: (ctx) => {
          calls.record(ctx);
          throw new Error(`boom ${ctx.job.attempt}`);
        },
      },
    });
    const { job } = await baton.enqueue({ jobType: 'flaky', queue: 'q', maxAttempts: 3 });

    const r = await rowInState(db, job.id, 'dead_lettered');
    expect(r.attempt).toBe(3);
    expect(r.dead_letter_reason).toBe('attempts_exhausted');
    expect(r.errors).toHaveLength(3);
    expect(r.errors.map((e) => e.kind)).toEqual(['transient', 'transient', 'transient']);
    expect(r.errors.map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(r.errors.map((e) => e.message)).toEqual(['boom 1', 'boom 2', 'boom 3']);
    // Every attempt ran under a new, strictly larger token.
    const tokens = r.errors.map((e) => BigInt(e.token));
    expect(tokens[0]! < tokens[1]! && tokens[1]! < tokens[2]!).toBe(true);
    expect(calls.of(job.id)).toBe(3);
    expect(baton.stats()).toMatchObject({ retried: 2, deadLettered: 1, fencedWrites: 0 });
  });

  it.each([
    ['thrown directly', () => new TerminalError('bad input')],
    ['nested as a cause', () => new Error('wrapper', { cause: new Error('middle', { cause: new TerminalError('bad input') }) })],
  ])('TerminalError %s dead-letters after one attempt', async (_, makeError) => {
    const calls = new Invocations();
    const baton = await engines.start({
      queues: { q: 2 },
      handlers: {
        fatal: (ctx) => {
          calls.record(ctx);
          throw makeError();
        },
      },
    });
    const { job } = await baton.enqueue({ jobType: 'fatal', queue: 'q', maxAttempts: 5 });

    const r = await rowInState(db, job.id, 'dead_lettered');
    expect(r.attempt).toBe(1);
    expect(r.dead_letter_reason).toBe('terminal_error');
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ kind: 'terminal', attempt: 1 });
    expect(calls.of(job.id)).toBe(1);
  });

  it('a cause chain with a cycle and no TerminalError is transient (retried)', async () => {
    const baton = await engines.start({
      queues: { q: 1 },
      handlers: {
        cyclic: () => {
          const a = new Error('a');
          const b = new Error('b', { cause: a });
          (a as { cause?: unknown }).cause = b;
          throw a;
        },
      },
    });
    const { job } = await baton.enqueue({ jobType: 'cyclic', queue: 'q', maxAttempts: 2 });

    const r = await rowInState(db, job.id, 'dead_lettered');
    expect(r.dead_letter_reason).toBe('attempts_exhausted');
    expect(r.errors.map((e) => e.kind)).toEqual(['transient', 'transient']);
  });

  it("an unknown job type is retried (kind 'unknown_job_type'), and runs once a worker has its handler", async () => {
    // Worker without the handler: one attempt, then it stops before claiming again.
    const old = await engines.start({ queues: { q: 1 }, pollIntervalMs: 60_000 });
    const stopped = deferred<Promise<void>>();
    old.events.on('retried', () => stopped.resolve(old.stop()));
    const { job } = await old.enqueue({ jobType: 'new.type', queue: 'q', maxAttempts: 5 });

    await withTimeout(stopped.promise, 10_000, 'the first attempt to be retried');
    const retried = await row(db, job.id);
    expect(retried.state).toBe('pending');
    expect(retried.attempt).toBe(1);
    expect(retried.errors).toHaveLength(1);
    expect(retried.errors[0]).toMatchObject({ kind: 'unknown_job_type', attempt: 1 });

    // The rolled-out worker has the handler.
    const calls = new Invocations();
    await engines.start({
      queues: { q: 1 },
      handlers: {
        'new.type': (ctx) => {
          calls.record(ctx);
          return { ok: true };
        },
      },
    });
    const done = await rowInState(db, job.id, 'succeeded');
    expect(done.attempt).toBe(2);
    expect(done.result).toEqual({ ok: true });
    expect(done.errors.map((e) => e.kind)).toEqual(['unknown_job_type']);
    expect(calls.of(job.id)).toBe(1);
  });

  it('an unknown job type dead-letters once its budget is spent, one unknown_job_type entry per attempt', async () => {
    const baton = await engines.start({ queues: { q: 1 } });
    const { job } = await baton.enqueue({ jobType: 'nobody.handles.this', queue: 'q', maxAttempts: 3 });

    const r = await rowInState(db, job.id, 'dead_lettered');
    expect(r.attempt).toBe(3);
    expect(r.errors.map((e) => e.kind)).toEqual(['unknown_job_type', 'unknown_job_type', 'unknown_job_type']);
  });

  it('a delayed job is held back until its run_at on the database clock, then found by polling', async () => {
    const calls = new Invocations();
    const baton = await engines.start({ queues: { q: 1 }, handlers: { later: (ctx) => calls.record(ctx) } });
    const { job } = await baton.enqueue({ jobType: 'later', queue: 'q', delayMs: 400 });
    const done = await rowInState(db, job.id, 'succeeded');
    const times = await db.query<{ held: boolean }>(
      `SELECT started_at >= run_at AND run_at >= created_at + interval '400 milliseconds' AS held FROM baton.jobs WHERE id = $1`,
      [job.id],
    );
    expect(times.rows[0]!.held).toBe(true);
    expect(done.attempt).toBe(1);
    expect(calls.of(job.id)).toBe(1);
  });

  it('a retry due before the next poll is claimed when its backoff ends, with no poll and no NOTIFY', async () => {
    // The poll timer is a minute away and a retry sends no NOTIFY: only the worker's own
    // wake-up at the end of the backoff (at most 200 ms here) can claim attempt 2 in time.
    let failed = 0;
    const baton = await engines.start({
      queues: { q: 1 },
      pollIntervalMs: 60_000,
      backoffBaseMs: 200,
      backoffCapMs: 200,
      handlers: {
        flaky: () => {
          if (failed++ === 0) throw new Error('first attempt fails');
          return 'second';
        },
      },
    });
    const { job } = await baton.enqueue({ jobType: 'flaky', queue: 'q', maxAttempts: 2 });
    const done = await rowInState(db, job.id, 'succeeded', 20_000);
    expect(done.attempt).toBe(2);
    expect(done.result).toBe('second');
  });
});
