// Periodic: one run at start, the next an interval after the last settled, never two at once;
// a task that throws (before or after it returns its promise) goes to onError and the loop
// goes on; stop waits for the run in flight and nothing runs after it.

import { describe, expect, it, vi } from 'vitest';
import { Periodic } from '../../src/core/periodic.ts';
import { deferred, waitFor } from '../helpers/wait.ts';

describe('Periodic', () => {
  it('runs at start and again each interval, one run at a time', async () => {
    let runs = 0;
    let inFlight = 0;
    let overlapped = false;
    const p = new Periodic('t', {
      intervalMs: 5,
      task: async () => {
        runs++;
        overlapped ||= ++inFlight > 1;
        await new Promise((r) => setTimeout(r, 10));
        inFlight--;
      },
      onError: () => undefined,
    });
    p.start();
    p.start();
    await waitFor(() => runs >= 4, { message: 'four runs' });
    await p.stop();
    expect(overlapped).toBe(false);
  });

  it('sends a failure to onError, a synchronous throw too, and keeps going', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const p = new Periodic('t', {
      intervalMs: 1,
      task: () => {
        runs++;
        if (runs === 1) throw new Error('sync');
        if (runs === 2) return Promise.reject(new Error('async'));
        return Promise.resolve();
      },
      onError: (err) => errors.push(err),
    });
    p.start();
    await waitFor(() => runs >= 3, { message: 'a run after two failures' });
    await p.stop();
    expect(errors.map((e) => (e as Error).message)).toEqual(['sync', 'async']);
  });

  it('stop waits for the run in flight, and nothing runs after it', async () => {
    // Fake timers: "nothing after" is read after the clock ran far past many intervals, not after a sleep.
    vi.useFakeTimers();
    try {
      const gate = deferred();
      let runs = 0;
      let finished = false;
      const p = new Periodic('t', {
        intervalMs: 1,
        task: async () => {
          runs++;
          await gate.promise;
          finished = true;
        },
        onError: () => undefined,
      });
      p.start();
      await vi.advanceTimersByTimeAsync(0);
      expect(runs).toBe(1);
      const stopped = p.stop().then(() => finished);
      gate.resolve();
      expect(await stopped).toBe(true);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(runs).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});
