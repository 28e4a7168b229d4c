// Progress reports (ctx.progress) end to end: stored fenced by the lease at the next heartbeat,
// the latest value of a tight loop coalesced into a few writes, emitted as 'progress' events,
// read back by admin.getJob; a zombie's report after its lease was taken over stores nothing;
// a job that never reports costs no statement; a replay clears it; bad values are refused with
// INVALID_ARGUMENT.

import { describe, expect, it } from 'vitest';
import { isBatonError, type JobContext, type JobProgress, PROGRESS_MAX_BYTES } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { deferred, Signal, waitFor } from '../helpers/wait.ts';
import { row, rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();
const progressOf = async (id: string) =>
  (await db.query<{ progress: unknown }>('SELECT progress FROM baton.jobs WHERE id = $1', [id])).rows[0]?.progress;

describe('ctx.progress', () => {
  const engines = useEngines(db);
  /** A pool that counts the progress statements sent through it. */
  const countingPool = () => {
    const counted = { progress: 0 };
    const pool = engines.pool((config, run) => {
      if (/SET progress =/.test((config as { text?: string }).text ?? '')) counted.progress++;
      return run();
    });
    return { pool, counted };
  };

  it('stores the latest value of a tight loop at the next heartbeat, a few writes for thousands of calls, and emits it', async () => {
    const { pool, counted } = countingPool();
    const gate = engines.gate();
    const entered = new Signal<JobContext>();
    const b = await engines.start({
      pool,
      queues: { q: 1 },
      heartbeatMs: 100,
      handlers: {
        work: async (ctx) => {
          for (let i = 1; i <= 5_000; i++) ctx.progress({ done: i, of: 5_000 });
          entered.emit(ctx);
          await gate.promise;
          ctx.progress(100);
          return 'ok';
        },
      },
    });
    const events: Array<{ id: string; progress: JobProgress }> = [];
    b.events.on('progress', (e) => events.push({ id: e.job.id, progress: e.progress }));
    const { job } = await b.enqueue({ jobType: 'work', queue: 'q' });
    await entered.next({ message: 'the handler to report' });
    // The event follows the stored write's answer.
    await waitFor(() => events.length > 0, { message: 'the last report of the loop to be stored' });
    expect(await progressOf(job.id)).toEqual({ done: 5_000, of: 5_000 });
    // 5,000 calls, coalesced: one write per heartbeat interval at most, and here one.
    expect(counted.progress).toBe(1);
    expect(events).toEqual([{ id: job.id, progress: { done: 5_000, of: 5_000 } }]);
    expect((await b.admin.getJob(job.id)).progress).toEqual({ done: 5_000, of: 5_000 });
    // Heartbeats with nothing new to report send no progress statement.
    const hb = (await row(db, job.id)).lease_expires_at!.getTime();
    await waitFor(async () => (await row(db, job.id)).lease_expires_at!.getTime() > hb + 150, { message: 'two more heartbeats' });
    expect(counted.progress).toBe(1);
    gate.resolve(undefined);
    await rowInState(db, job.id, 'succeeded');
  });

  it('a job that never reports sends no progress statement, and its progress reads null', async () => {
    const { pool, counted } = countingPool();
    const gate = engines.gate();
    const entered = new Signal();
    const b = await engines.start({
      pool,
      queues: { q: 1 },
      heartbeatMs: 50,
      handlers: {
        plain: async () => {
          entered.emit();
          await gate.promise;
        },
      },
    });
    const { job } = await b.enqueue({ jobType: 'plain', queue: 'q' });
    await entered.next();
    const hb = (await row(db, job.id)).lease_expires_at!.getTime();
    await waitFor(async () => (await row(db, job.id)).lease_expires_at!.getTime() > hb + 150, { message: 'several heartbeats' });
    gate.resolve(undefined);
    await rowInState(db, job.id, 'succeeded');
    expect(counted.progress).toBe(0);
    expect((await b.admin.getJob(job.id)).progress).toBeNull();
  });

  it('a zombie’s report after its lease was taken over stores nothing; the new holder’s does', async () => {
    const aEntered = new Signal<JobContext>();
    const aGate = engines.gate();
    // A's heartbeats fail while `stalled` (a partition of its renewals only): a renewal would
    // extend the lease expired by hand below, and B could never take the job over. Its
    // progress statements still go out, with A's old token, so the fence in the database
    // (not A's own lost flag) is what must refuse them.
    let stalled = false;
    const aPool = engines.pool((config, run) => {
      if (stalled && / AS cancel\)/.test((config as { text?: string }).text ?? '')) return Promise.reject(new Error('stalled'));
      return run();
    });
    const a = await engines.start({
      pool: aPool,
      queues: { q: 1 },
      leaseMs: 60_000,
      heartbeatMs: 100,
      reaper: false,
      handlers: {
        slow: async (ctx) => {
          aEntered.emit(ctx);
          await aGate.promise;
        },
      },
    });
    const aFenced: number[] = [];
    a.events.on('fenced', (e) => {
      if (e.kind === 'progress') aFenced.push(e.count);
    });
    const { job } = await a.enqueue({ jobType: 'slow', queue: 'q' });
    const ctxA = await aEntered.next({ message: 'A to start the job' });
    ctxA.progress(10);
    await waitFor(async () => (await progressOf(job.id)) === 10, { message: 'A’s report while it holds the lease' });

    // A's lease expires; B reaps and takes the job over, and reports.
    stalled = true;
    await db.query(`UPDATE baton.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [job.id]);
    const bEntered = new Signal<JobContext>();
    const bGate = engines.gate();
    const b = await engines.start({
      queues: { q: 1 },
      reaperIntervalMs: 50,
      heartbeatMs: 100,
      handlers: {
        slow: async (ctx) => {
          ctx.progress({ by: 'B' });
          bEntered.emit(ctx);
          await bGate.promise;
        },
      },
    });
    const ctxB = await bEntered.next({ message: 'B to take the job over' });
    expect(BigInt(ctxB.token)).toBeGreaterThan(BigInt(ctxA.token));
    await waitFor(async () => JSON.stringify(await progressOf(job.id)) === '{"by":"B"}', { message: 'B’s report' });
    // The zombie reports again and its statement reaches the database under its old token.
    expect(ctxA.signal.aborted).toBe(false);
    ctxA.progress({ by: 'A' });
    await waitFor(() => aFenced.length > 0, { message: 'A’s report to be fenced off' });
    expect(await progressOf(job.id)).toEqual({ by: 'B' });
    // Its renewals back, A learns it lost the lease.
    stalled = false;
    await waitFor(() => ctxA.signal.aborted, { message: 'A to learn it lost the lease' });
    expect(await progressOf(job.id)).toEqual({ by: 'B' });
    aGate.resolve(undefined);
    bGate.resolve(undefined);
    await rowInState(db, job.id, 'succeeded');
    expect((await b.admin.getJob(job.id)).progress).toEqual({ by: 'B' });
    // A replay starts the job over: its progress is cleared with its result.
    await Promise.all([a.stop(), b.stop()]);
    expect((await engines.producer().admin.replay(job.id)).progress).toBeNull();
    expect(await progressOf(job.id)).toBeNull();
  });

  it('a last report that loses the race with its own completion is not counted as a fenced write', async () => {
    // The handler reports and returns; the heartbeat picks the report up while the completion
    // is in flight and sends it once the completion has committed, so the fence refuses it.
    // That is the outcome winning, not a zombie: the 'fenced' metric must not count it.
    const committed = deferred();
    const progressSent = deferred();
    let progressAnswered = false;
    // The heartbeater's tick ends by touching the worker row, after it handled the answer.
    const tickDone = deferred();
    const pool = engines.pool(async (config, run) => {
      const c = config as { name?: string; text?: string };
      if (progressAnswered && /worker_touch$/.test(c.name ?? '')) tickDone.resolve(undefined);
      if (/SET progress =/.test(c.text ?? '')) {
        progressSent.resolve(undefined);
        await committed.promise;
        const r = await run();
        progressAnswered = true;
        return r;
      }
      if (/job_complete|result = CASE/.test(`${c.name ?? ''} ${c.text ?? ''}`)) {
        const r = await run();
        committed.resolve(undefined);
        await progressSent.promise;
        return r;
      }
      return run();
    });
    const b = await engines.start({
      pool,
      queues: { q: 1 },
      heartbeatMs: 50,
      handlers: {
        last: (ctx) => {
          ctx.progress(100);
          return 'done';
        },
      },
    });
    const fenced: Array<{ kind: string; count: number }> = [];
    b.events.on('fenced', (e) => fenced.push(e));
    const { job } = await b.enqueue({ jobType: 'last', queue: 'q' });
    await rowInState(db, job.id, 'succeeded');
    await tickDone.promise;
    // The report came too late to be stored; the job ended as its completion said.
    expect(await progressOf(job.id)).toBeNull();
    expect(fenced).toEqual([]);
    expect(b.stats().fencedWrites).toBe(0);
  });

  it('refuses anything but a number 0..100 or a JSON object of at most PROGRESS_MAX_BYTES, with INVALID_ARGUMENT', async () => {
    const codes: Array<[string, unknown]> = [];
    const b = await engines.start({
      queues: { q: 1 },
      handlers: {
        bad: (ctx) => {
          const tries: Array<[string, unknown]> = [
            ['-1', -1],
            ['101', 101],
            ['NaN', Number.NaN],
            ['string', '50%'],
            ['array', [1]],
            ['null', null],
            ['too large', { s: 'x'.repeat(PROGRESS_MAX_BYTES) }],
            ['NUL', { s: 'a\u0000b' }],
            ['toJSON to a number out of range', { toJSON: () => 500 }],
            ['Date (toJSON to a string)', new Date(0)],
            ['toJSON to an array', { toJSON: () => [1] }],
            ['BigInt', { n: 1n }],
            ['Infinity', Number.POSITIVE_INFINITY],
          ];
          for (const [name, v] of tries) {
            try {
              ctx.progress(v as JobProgress);
              codes.push([name, 'accepted']);
            } catch (err) {
              codes.push([name, isBatonError(err) ? { code: err.code, details: err.details } : String(err)]);
            }
          }
          ctx.progress({ s: 'x'.repeat(PROGRESS_MAX_BYTES - 8) });
          ctx.progress(0);
          ctx.progress(100);
        },
      },
    });
    const { job } = await b.enqueue({ jobType: 'bad', queue: 'q' });
    await rowInState(db, job.id, 'succeeded');
    const invalid = { code: 'INVALID_ARGUMENT', details: undefined };
    expect(codes).toEqual([
      ['-1', invalid],
      ['101', invalid],
      ['NaN', invalid],
      ['string', invalid],
      ['array', invalid],
      ['null', invalid],
      ['too large', { code: 'INVALID_ARGUMENT', details: { limitBytes: PROGRESS_MAX_BYTES, bytes: PROGRESS_MAX_BYTES + 8 } }],
      ['NUL', invalid],
      ['toJSON to a number out of range', invalid],
      ['Date (toJSON to a string)', invalid],
      ['toJSON to an array', invalid],
      ['BigInt', invalid],
      ['Infinity', invalid],
    ]);
  });
});
