// Unit tests (no database) of the in-flight lease table: a handler's AbortSignal is
// made lazily, so it must behave exactly as an eager one whether it is first read
// before or after the lease was lost.

import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.ts';
import { LeaseTable } from '../../src/core/lease-table.ts';
import { LeaseLostError } from '../../src/types/errors.ts';
import type { LeasedJob } from '../../src/types/job.ts';

const job = (id: string, token: string) => ({ id, token }) as unknown as LeasedJob;

describe('LeaseTable', () => {
  it('a signal read before the loss fires abort once, with the LeaseLostError as reason', () => {
    const t = new LeaseTable(systemClock);
    const e = t.add(job('1', '7'), 0);
    const signal = e.signal;
    let fired = 0;
    signal.addEventListener('abort', () => fired++);
    expect(signal.aborted).toBe(false);
    expect(t.markLost(e)).toBe(true);
    expect(t.markLost(e, new Error('again'))).toBe(false);
    expect(fired).toBe(1);
    expect(signal.reason).toBeInstanceOf(LeaseLostError);
    expect(e.signal).toBe(signal);
  });

  it('a signal first read after the loss is already aborted, with the first reason', () => {
    const t = new LeaseTable(systemClock);
    const e = t.add(job('2', '8'), 0);
    const reason = new Error('drain deadline');
    e.abort(reason);
    e.abort(new Error('later'));
    expect(e.signal.aborted).toBe(true);
    expect(e.signal.reason).toBe(reason);
  });

  it('delete removes only the entry it was given (a newer lease of the same job stays)', () => {
    const t = new LeaseTable(systemClock);
    const old = t.add(job('3', '1'), 0);
    const newer = t.add(job('3', '2'), 0);
    t.delete(old);
    expect(t.get('3')).toBe(newer);
    expect(t.size).toBe(1);
    t.markLost(newer);
    expect(t.live()).toEqual([]);
  });
});
