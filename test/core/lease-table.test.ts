// Unit tests (no database) of the in-flight lease table: a handler's AbortSignal is
// made lazily, so it must behave exactly as an eager one whether it is first read
// before or after the lease was lost; a cancel request that comes before its lease is
// added reaches that lease when it is added, and only that one.

import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.ts';
import { type CancelVia, EARLY_CANCEL_MS, type InFlight, LeaseTable } from '../../src/core/lease-table.ts';
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

  it('a cancel request is answered at once for a held lease, or by add when it came first, for that token only, once', () => {
    const now = 0;
    const seen: Array<[string, string, CancelVia]> = [];
    const t = new LeaseTable({ now: () => now }, (e: InFlight, via) => seen.push([e.job.id, e.token, via]));
    t.requestCancel('4', '9', 'local');
    t.requestCancel('5', '3', 'notify');
    t.add(job('4', '8'), 0); // an older lease of the same job: not the one asked to stop
    expect(seen).toEqual([]);
    t.add(job('4', '9'), 0);
    t.add(job('5', '3'), 0);
    expect(seen).toEqual([
      ['4', '9', 'local'],
      ['5', '3', 'notify'],
    ]);
    t.add(job('4', '9'), 0); // answered once
    expect(seen).toHaveLength(2);
    t.requestCancel('5', '3', 'notify'); // a lease the table holds: answered at once
    t.requestCancel('5', '2', 'notify'); // another lease of that job: not this one's
    expect(seen).toEqual([
      ['4', '9', 'local'],
      ['5', '3', 'notify'],
      ['5', '3', 'notify'],
    ]);
  });

  it('a cancel request for a lease never added is forgotten after EARLY_CANCEL_MS, and at most 1,024 are kept', () => {
    let now = 0;
    const seen: string[] = [];
    const t = new LeaseTable({ now: () => now }, (e: InFlight) => seen.push(e.job.id));
    t.requestCancel('6', '1', 'notify');
    now = EARLY_CANCEL_MS;
    t.requestCancel('7', '1', 'notify'); // sweeps the expired one
    t.add(job('6', '1'), now);
    expect(seen).toEqual([]);
    for (let i = 0; i < 1_024; i++) t.requestCancel(`x${i}`, '1', 'notify');
    t.add(job('7', '1'), now); // the oldest of 1,025 went
    t.add(job('x0', '1'), now);
    t.add(job('x1023', '1'), now);
    expect(seen).toEqual(['x0', 'x1023']);
  });
});
