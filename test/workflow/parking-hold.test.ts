// Parking.hold, the wait of a new step for a sibling branch (context.ts #checkNew): it ends when
// the branch reaches its stored step, or after a quiet time with nothing else in flight. The
// quiet is wall-clock time, so an event loop that stalls past it (a loaded machine, GC, another
// branch's synchronous work) must not count as quiet: timers run before the I/O callbacks that
// became ready meanwhile, and the branch's I/O may have ended in time behind the timer.

import { stat } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { Parking } from '../../src/core/workflow/parking.ts';

/** Blocks the event loop for `ms`, as synchronous work or a loaded machine does. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

/** A parking with one new step in flight, holding for `reached()`. */
function holder(reached: () => boolean, quietMs: number) {
  const parking = new Parking(async () => undefined);
  parking.begin();
  return { parking, held: parking.hold(reached, quietMs, () => false) };
}

describe('Parking.hold', () => {
  it('answers true once a sibling reaches the entry, however long it took while calls came and went', async () => {
    let reached = false;
    const { parking, held } = holder(() => reached, 50);
    parking.begin();
    setTimeout(() => {
      parking.end();
      reached = true;
      parking.begin();
      parking.end();
    }, 120);
    expect(await held).toBe(true);
  });

  it('answers false after the quiet time when nothing else is in flight (a sequential function: the run blocks)', async () => {
    const { held } = holder(() => false, 20);
    expect(await held).toBe(false);
  });

  it('a stall of the event loop past the quiet time is not quiet: outside I/O that ended meanwhile still lets the sibling reach its entry', async () => {
    let reached = false;
    const { parking, held } = holder(() => reached, 100);
    // From the check phase: the sibling's outside I/O starts and ends while the loop is stalled,
    // and the next turn of the loop runs the overdue quiet timer before the I/O's callback.
    setImmediate(() => {
      // The sibling's outside I/O, then its stored step (a call enters and leaves).
      void stat('.').then(() => {
        reached = true;
        parking.begin();
        parking.end();
      });
      stall(250);
    });
    expect(await held).toBe(true);
  });

  it('a loop that stalls at every quiet still ends the hold, after a few late ones', async () => {
    const staller = setInterval(() => stall(30), 1);
    try {
      const { held } = holder(() => false, 10);
      expect(await held).toBe(false);
    } finally {
      clearInterval(staller);
    }
  });
});
