// waitFor polls to a deadline and names what it waited for; Signal buffers
// values fired before anyone waits.

import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { deferred, nextEvent, Signal, WaitTimeoutError, waitFor } from './wait.ts';

describe('waitFor', () => {
  it('returns the first truthy value, treating throws as "not yet"', async () => {
    let n = 0;
    const v = await waitFor(
      () => {
        n++;
        if (n < 3) throw new Error('not yet');
        return n;
      },
      { intervalMs: 1 },
    );
    expect(v).toBe(3);
  });

  it('times out with a message naming the condition and the last error', async () => {
    const err = await waitFor(
      () => {
        throw new Error('still pending');
      },
      { timeoutMs: 30, intervalMs: 5, message: 'job 7 to succeed' },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WaitTimeoutError);
    expect((err as Error).message).toMatch(/timed out after 30 ms .*waiting for job 7 to succeed; last error: still pending/);
  });
});

describe('Signal and deferred', () => {
  it('delivers buffered and later values in order', async () => {
    const s = new Signal<number>();
    s.emit(1);
    const first = s.next();
    const second = s.next();
    s.emit(2);
    expect(await first).toBe(1);
    expect(await second).toBe(2);
    expect(s.pending).toBe(0);
  });

  it('rejects a wait that nobody signals', async () => {
    await expect(new Signal().next({ timeoutMs: 10, message: 'lease lost' })).rejects.toThrow(/lease lost/);
  });

  it('deferred settles once and reports it', async () => {
    const d = deferred<string>();
    expect(d.settled).toBe(false);
    d.resolve('ok');
    expect(d.settled).toBe(true);
    expect(await d.promise).toBe('ok');
  });

  it('nextEvent resolves with the event args or times out', async () => {
    const e = new EventEmitter();
    const p = nextEvent(e, 'job', { timeoutMs: 1_000 });
    e.emit('job', 1, 'x');
    expect(await p).toEqual([1, 'x']);
    await expect(nextEvent(e, 'never', { timeoutMs: 10 })).rejects.toThrow(/event 'never'/);
    expect(e.listenerCount('never')).toBe(0);
  });
});
