// A claim that commits but whose reply never reaches the worker (a reset, a timeout, a
// destroyed connection) leaves jobs leased to a live worker that does not know it holds
// them. The worker finds them after the failure and gives them back with the attempt
// refunded, so they run within moments, not after the lease, and a job with one attempt
// is not dead-lettered unrun. Leases of a claim still in flight, and leases an earlier
// process left under the same configured worker id, are not touched.

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { deferred } from '../helpers/wait.ts';
import { Invocations, isClaim, row, rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();
/** Long enough that lease expiry (the old way out) cannot explain a prompt recovery. */
const LEASE_MS = 60_000;

const is = (config: { name?: string }, name: string) => typeof config.name === 'string' && config.name.endsWith(name);
/** What node-postgres says when the connection dies between the commit and its reply. */
const lostReply = () => new Error('Connection terminated unexpectedly');

describe('stranded leases', () => {
  const engines = useEngines(db);

  /** A pool whose first claim that takes jobs commits and then loses its reply. */
  function poolLosingFirstClaimReply() {
    let lost = 0;
    const pool = engines.pool(async (config, run) => {
      const res = await run();
      if (isClaim(config) && res.rows.length > 0 && lost === 0) {
        lost++;
        throw lostReply();
      }
      return res;
    });
    return { pool, lost: () => lost };
  }

  it('a job whose claim reply was lost runs promptly, once, with its single attempt', async () => {
    const calls = new Invocations();
    const { job } = await engines.producer().enqueue({ jobType: 'work', queue: 'q', maxAttempts: 1 });
    const { pool, lost } = poolLosingFirstClaimReply();
    const worker = engines.create({ pool, queues: { q: 1 }, leaseMs: LEASE_MS, handlers: { work: (ctx) => calls.record(ctx) } });
    const released: Array<{ reason: string; count: number }> = [];
    worker.events.on('released', (e) => released.push(e));
    await worker.start();
    const done = await rowInState(db, job.id, 'succeeded');
    expect(lost()).toBe(1);
    expect(calls.of(job.id)).toBe(1);
    expect(done.attempt).toBe(1);
    expect(worker.stats().strandedReleased).toBe(1);
    expect(released).toEqual([{ queue: 'q', count: 1, reason: 'stranded' }]);
  });

  it('leaves a claim in flight alone: its jobs are started by that claim, not released under it', async () => {
    const calls = new Invocations();
    const producer = engines.producer();
    const { job: a } = await producer.enqueue({ jobType: 'work', queue: 'a' });
    const { job: b } = await producer.enqueue({ jobType: 'work', queue: 'b' });
    // Queue b's claim commits and then waits until the sweep has read the owned leases (both
    // a's and b's); queue a's claim commits and loses its reply, which starts the sweep.
    // Queue a's claim fails only once b's has committed, so the sweep surely sees both.
    const ownedRead = deferred();
    const bCommitted = deferred();
    let lostA = false;
    const pool = engines.pool(async (config, run) => {
      const res = await run();
      if (isClaim(config) && res.rows.length > 0) {
        if (config.values?.[0] === 'b') {
          bCommitted.resolve();
          await ownedRead.promise;
        }
        if (config.values?.[0] === 'a' && !lostA) {
          lostA = true;
          await bCommitted.promise;
          throw lostReply();
        }
      }
      if (is(config, 'job_leases_owned') && res.rows.length === 2) ownedRead.resolve();
      return res;
    });
    const worker = await engines.start({
      pool,
      queues: { a: 1, b: 1 },
      leaseMs: LEASE_MS,
      handlers: { work: (ctx) => calls.record(ctx) },
    });
    await rowInState(db, a.id, 'succeeded');
    await rowInState(db, b.id, 'succeeded');
    expect(ownedRead.settled).toBe(true);
    expect(calls.of(a.id)).toBe(1);
    expect(calls.of(b.id)).toBe(1);
    expect(worker.stats()).toMatchObject({ strandedReleased: 1, fencedWrites: 0 });
  });

  it('with a configured worker id, leaves the leases an earlier process held under that id to the reaper', async () => {
    const calls = new Invocations();
    const workerId = 'configured-1';
    // An earlier process with this id crashed while running this job (its attempt is spent).
    const earlier = await insertJob(db.pool, {
      queue: 'q',
      jobType: 'work',
      state: 'running',
      leaseOwner: workerId,
      attempt: 1,
      leaseExpiresAt: { inMs: LEASE_MS },
    });
    const before = await row(db, earlier);
    const { job } = await engines.producer().enqueue({ jobType: 'work', queue: 'q', maxAttempts: 1 });
    const { pool } = poolLosingFirstClaimReply();
    const worker = await engines.start({
      pool,
      workerId,
      queues: { q: 1 },
      leaseMs: LEASE_MS,
      handlers: { work: (ctx) => calls.record(ctx) },
    });
    await rowInState(db, job.id, 'succeeded');
    expect(calls.of(job.id)).toBe(1);
    expect(worker.stats().strandedReleased).toBe(1);
    const after = await row(db, earlier);
    expect(after).toMatchObject({ state: 'running', lease_owner: workerId, attempt: 1, lease_token: before.lease_token });
    expect(calls.of(earlier)).toBe(0);
  });
});
