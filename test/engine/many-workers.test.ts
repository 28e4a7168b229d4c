// Eight engines (eight pools, eight presence/listen connections) drain 2,000 jobs
// together: every job succeeds exactly once, under one token each, and no write
// anywhere was fenced off.

import { describe, expect, it } from 'vitest';
import type { Baton, JobContext } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { Signal, waitFor } from '../helpers/wait.ts';
import { Invocations, useEngines } from './harness.ts';

const db = useTestDatabase();
const WORKERS = 8;
const JOBS = 2_000;

describe.each([true, false])('8 workers draining 2,000 jobs (claimIntoRunning=%s)', (claimIntoRunning) => {
  const engines = useEngines(db, () => ({ claimIntoRunning }));

  it('runs every job exactly once and fences nothing', async () => {
    const calls = new Invocations();
    const perWorker = new Array<number>(WORKERS).fill(0);
    const workers: Baton[] = [];
    for (let i = 0; i < WORKERS; i++) {
      workers.push(
        engines.create({
          queues: { bulk: 8 },
          poolSize: 2,
          handlers: {
            noop: (ctx) => {
              calls.record(ctx);
              perWorker[i]!++;
              return { by: i };
            },
          },
        }),
      );
    }
    const producer = engines.producer();
    const specs = Array.from({ length: JOBS }, (_, n) => ({ jobType: 'noop', queue: 'bulk', payload: { n } }));
    const enqueued = await producer.enqueueMany(specs);
    expect(enqueued.every((r) => r.created)).toBe(true);

    await Promise.all(workers.map((w) => w.start()));
    await waitFor(
      async () => {
        const r = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM baton.jobs WHERE state = 'succeeded'`);
        return r.rows[0]!.n === JOBS;
      },
      { timeoutMs: 60_000, intervalMs: 100, message: `${JOBS} jobs to succeed` },
    );

    const summary = await db.query<{ state: string; n: number; max_attempt: number; tokens: number; with_errors: number }>(
      `SELECT state, count(*)::int AS n, max(attempt) AS max_attempt, count(DISTINCT lease_token)::int AS tokens,
              count(*) FILTER (WHERE jsonb_array_length(errors) > 0)::int AS with_errors
         FROM baton.jobs GROUP BY state`,
    );
    // One claim per job: attempt 1 everywhere, one distinct token per job, no error recorded.
    expect(summary.rows).toEqual([{ state: 'succeeded', n: JOBS, max_attempt: 1, tokens: JOBS, with_errors: 0 }]);
    expect(calls.byJob.size).toBe(JOBS);
    expect(calls.duplicates()).toEqual([]);
    expect(calls.total).toBe(JOBS);

    const stats = workers.map((w) => w.stats());
    const sum = (k: 'claimed' | 'succeeded' | 'fencedWrites' | 'leasesLost' | 'retried') => stats.reduce((a, s) => a + s[k], 0);
    expect({
      claimed: sum('claimed'),
      succeeded: sum('succeeded'),
      fenced: sum('fencedWrites'),
      lost: sum('leasesLost'),
      retried: sum('retried'),
    }).toEqual({ claimed: JOBS, succeeded: JOBS, fenced: 0, lost: 0, retried: 0 });
    // The work was shared: SKIP LOCKED let more than one worker claim.
    expect(perWorker.filter((n) => n > 0).length).toBeGreaterThan(1);
  });

  it('per-queue concurrency caps in-flight handlers of each queue', async () => {
    const gate = engines.gate();
    const running = { a: 0, b: 0 };
    const peak = { a: 0, b: 0 };
    const entered = new Signal<string>();
    const handler = (queue: 'a' | 'b') => async (ctx: JobContext) => {
      running[queue]++;
      peak[queue] = Math.max(peak[queue], running[queue]);
      entered.emit(ctx.job.id);
      await gate.promise;
      running[queue]--;
    };
    const worker = await engines.start({ queues: { a: 2, b: 1 }, handlers: { ja: handler('a'), jb: handler('b') } });
    await worker.enqueueMany([
      ...Array.from({ length: 5 }, () => ({ jobType: 'ja', queue: 'a' })),
      ...Array.from({ length: 5 }, () => ({ jobType: 'jb', queue: 'b' })),
    ]);
    for (let i = 0; i < 3; i++) await entered.next({ message: 'the first three jobs to start' });
    // Every slot is taken, so nothing more can be claimed until a handler returns.
    const live = await db.query<{ queue: string; n: number }>(
      `SELECT queue, count(*)::int AS n FROM baton.jobs WHERE state IN ('leased', 'running') GROUP BY queue ORDER BY queue`,
    );
    expect(live.rows).toEqual([
      { queue: 'a', n: 2 },
      { queue: 'b', n: 1 },
    ]);
    expect(worker.stats().slots).toEqual({ a: { concurrency: 2, inFlight: 2 }, b: { concurrency: 1, inFlight: 1 } });

    gate.resolve();
    await waitFor(async () => (await db.query(`SELECT 1 FROM baton.jobs WHERE state <> 'succeeded'`)).rowCount === 0, {
      message: 'all ten jobs to succeed',
    });
    expect(peak).toEqual({ a: 2, b: 1 });
  });
});
