// Heartbeats end to end, with the worker reaching PostgreSQL through a TCP proxy
// we can cut. A heartbeat that fails on the network is not lease loss: the job
// finishes normally once the network is back. A worker that cannot prove its
// lease for heartbeatDeadlineMs fences itself: its handler is aborted and it
// writes nothing for the job. (No reaper runs here: only the worker touches the row.)

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type JobContext, LeaseLostError } from '../../src/index.ts';
import { FaultProxy } from '../chaos/fault-proxy.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { nextEvent, Signal, waitFor } from '../helpers/wait.ts';
import { row, rowInState, useEngines } from './harness.ts';

const db = useTestDatabase();

describe.each([true, false])('heartbeats over a failing network (claimIntoRunning=%s)', (claimIntoRunning) => {
  let proxy: FaultProxy;
  let proxiedUrl: string;
  afterEach(async () => {
    await proxy.close();
  });
  const engines = useEngines(db, () => ({ claimIntoRunning }));
  // Runs before the harness stops the engines (hooks run in reverse order).
  // biome-ignore lint/suspicious/noDuplicateTestHooks: the harness's afterEach stops the engines; this one must heal the proxy first.
  afterEach(() => proxy.heal());

  beforeEach(async () => {
    const target = new URL(db.url);
    proxy = new FaultProxy({ targetHost: target.hostname, targetPort: Number(target.port || 5432) });
    const port = await proxy.listen();
    const via = new URL(db.url);
    via.hostname = proxy.host;
    via.port = String(port);
    proxiedUrl = via.toString();
  });

  async function workerHoldingJob() {
    const entered = new Signal<JobContext>();
    const gate = engines.gate();
    const worker = await engines.start({
      connectionString: proxiedUrl,
      queues: { q: 1 },
      leaseMs: 3_000,
      heartbeatMs: 250,
      reaper: false,
      dispatch: 'poll',
      pollIntervalMs: 60_000,
      handlers: {
        work: async (ctx) => {
          entered.emit(ctx);
          await gate.promise;
          return { by: 'worker' };
        },
      },
    });
    const { job } = await worker.enqueue({ jobType: 'work', queue: 'q' });
    const ctx = await entered.next({ message: 'the job to start' });
    return { worker, job, ctx, gate };
  }

  const cut = () => {
    proxy.setRefuse(true);
    proxy.resetAll();
  };

  it('a heartbeat that fails on the network is not lease loss; the job completes once it is back', async () => {
    const { worker, job, ctx, gate } = await workerHoldingJob();
    const before = await row(db, job.id);
    const failed = new Signal<void>();
    worker.events.on('error', (e) => {
      if (e.where === 'heartbeat') failed.emit();
    });

    cut();
    await failed.next({ message: 'a heartbeat to fail on the network' });
    proxy.heal();
    // A later heartbeat gets through and pushes the expiry out.
    await waitFor(async () => (await row(db, job.id)).lease_expires_at! > before.lease_expires_at!, {
      message: 'a heartbeat to renew the lease after the network is back',
    });
    expect(ctx.signal.aborted).toBe(false);
    expect(() => ctx.checkLease()).not.toThrow();

    gate.resolve();
    const done = await rowInState(db, job.id, 'succeeded');
    expect(done).toMatchObject({ attempt: 1, lease_token: ctx.token, result: { by: 'worker' }, errors: [] });
    // The row commits before the worker reads the write's reply and counts it.
    await waitFor(() => worker.stats().succeeded === 1, { message: 'the worker to count the success' });
    expect(worker.stats()).toMatchObject({ leasesLost: 0, fencedWrites: 0 });
  });

  it('a worker that cannot prove its lease for heartbeatDeadlineMs aborts the handler and writes nothing', async () => {
    const { worker, job, ctx, gate } = await workerHoldingJob();
    const lost = nextEvent(worker.events, 'leaseLost', { message: 'the worker to give up its lease' });

    cut();
    await lost;
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(() => ctx.checkLease()).toThrow(LeaseLostError);
    expect(worker.stats()).toMatchObject({ leasesLost: 1, fencedWrites: 0 });

    proxy.heal();
    gate.resolve();
    await waitFor(() => worker.stats().slots.q!.inFlight === 0, { message: 'the handler to return' });
    // The row is as the claim left it: the reaper, not this worker, decides what happens next.
    const after = await row(db, job.id);
    expect(after).toMatchObject({ state: 'running', lease_token: ctx.token, result: null, errors: [] });
    expect(worker.stats().succeeded).toBe(0);
  });

  it('a heartbeat that hangs (blackholed socket, query timeout far away) does not postpone the deadline', async () => {
    const { worker, ctx } = await workerHoldingJob();
    const lost = nextEvent(worker.events, 'leaseLost', { message: 'the worker to give up its lease', timeoutMs: 15_000 });
    // Bytes swallowed, no error: the heartbeat in flight only fails at the 10 s query timeout.
    proxy.setBlackhole(true);
    const t0 = performance.now();
    await lost;
    const waited = performance.now() - t0;
    expect(ctx.signal.aborted).toBe(true);
    // heartbeatDeadlineMs = 0.8 x 3 000 ms: given up before the lease (3 s) can expire.
    expect(waited).toBeLessThan(3_000);
  });
});
