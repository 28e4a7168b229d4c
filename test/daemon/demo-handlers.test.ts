// The demo handlers in isolation (no database): what each one does, and that
// sleep stops as soon as its lease signal aborts.

import { describe, expect, it } from 'vitest';
import type { JobContext } from '../../src/core/handler.ts';
import { boom, noop, poison, sleep } from '../../src/daemon/demo-handlers.ts';
import { TerminalError } from '../../src/types/errors.ts';
import type { LeasedJob } from '../../src/types/job.ts';

function ctx<P>(payload: P, attempt = 1, signal = new AbortController().signal, progress: unknown[] = []): JobContext<P> {
  const now = new Date();
  const job: LeasedJob = {
    id: '1',
    tenantId: 'default',
    queue: 'default',
    jobType: 'x',
    payload,
    priority: 0,
    runAt: now,
    attempt,
    maxAttempts: 3,
    idempotencyKey: null,
    replayCount: 0,
    errors: [],
    lastError: null,
    createdAt: now,
    updatedAt: now,
    startedAt: now,
    trace: null,
    cancelRequestedAt: null,
    state: 'running',
    token: '7',
    leaseOwner: 'w',
    leaseExpiresAt: now,
  };
  return { payload, job, token: '7', signal, checkLease: () => undefined, progress: (v) => void progress.push(v) };
}

describe('demo handlers', () => {
  it('noop succeeds', async () => {
    expect(await noop(ctx({}))).toEqual({ ok: true });
  });

  it('sleep returns after payload.ms', async () => {
    const progress: unknown[] = [];
    expect(await sleep(ctx({ ms: 5 }, 1, undefined, progress))).toEqual({ sleptMs: 5 });
    expect(progress).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
  });

  it('sleep stops when its signal aborts', async () => {
    const ac = new AbortController();
    const running = sleep(ctx({ ms: 60_000 }, 1, ac.signal));
    ac.abort();
    await expect(running).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('sleep refuses a bad duration terminally', async () => {
    await expect(sleep(ctx({ ms: 'soon' }))).rejects.toBeInstanceOf(TerminalError);
    await expect(sleep(ctx({ ms: -1 }))).rejects.toBeInstanceOf(TerminalError);
  });

  it('boom is always transient', () => {
    for (const attempt of [1, 2, 3]) {
      let thrown: unknown;
      try {
        boom(ctx({}, attempt));
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(Error);
      expect(thrown).not.toBeInstanceOf(TerminalError);
    }
  });

  it('poison is terminal on its first attempt', () => {
    expect(() => poison(ctx({}, 1))).toThrow(TerminalError);
  });
});
