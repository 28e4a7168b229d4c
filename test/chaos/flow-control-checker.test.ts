// The flow chaos checker must be able to fail, and must not blame the engine for a zombie: a
// run whose worker lost its lease (and wrote nothing) stops counting against the cap once that
// lease has expired, not when its handler ends.

import { describe, expect, it } from 'vitest';
import { checkFlow, type FlowLimits } from './flow-control-checker.ts';
import type { ExecRecord, HistoryRecord, WriteRecord } from './history.ts';

const T = 1_000_000;
const LEASE = 2_000;
const limits: FlowLimits = {
  keyOf: new Map(['1', '2', '3'].map((id) => [id, 'k'])),
  leaseMs: LEASE,
  cap: 2,
  rate: { limit: 100, periodMs: 1_000 },
};
const exec = (type: 'start' | 'end', jobId: string, token: string, worker: string, at: number): ExecRecord => ({
  type,
  jobId,
  token,
  worker,
  at,
  ...(type === 'end' ? { outcome: 'ok' as const } : {}),
});
const write = (
  kind: WriteRecord['kind'],
  jobId: string,
  token: string,
  worker: string,
  at: number,
  rows: number | null = 1,
): WriteRecord => ({
  type: 'write',
  kind,
  jobId,
  token,
  worker,
  rowsAffected: rows,
  sentAt: at - 1,
  at,
});
/** A run that ended and wrote its outcome. */
const done = (jobId: string, token: string, worker: string, from: number, to: number): HistoryRecord[] => [
  exec('start', jobId, token, worker, from),
  exec('end', jobId, token, worker, to),
  write('complete', jobId, token, worker, to + 1),
];

describe('flow chaos checker', () => {
  it('reports a third run of a key capped at 2', () => {
    const h = [
      ...done('1', '10', 'w0', T, T + 5_000),
      ...done('2', '11', 'w1', T, T + 5_000),
      ...done('3', '12', 'w2', T + 1_000, T + 2_000),
    ];
    expect(checkFlow(h, limits).violations).toEqual(['cap: key k ran 3 handlers at once (cap 2)']);
  });

  it('does not count a zombie past its lease: its worker was cut off, wrote nothing, and its job ran elsewhere', () => {
    // w0's run of job 1 proved its lease last at T + 500; it expired by T + 2,500. The job ran
    // again on w2 from T + 3,000 while w0's handler went on until T + 6,000 and wrote nothing.
    const zombie: HistoryRecord[] = [
      exec('start', '1', '10', 'w0', T),
      write('heartbeat', '1', '10', 'w0', T + 500),
      exec('end', '1', '10', 'w0', T + 6_000),
    ];
    const h = [...zombie, ...done('2', '11', 'w1', T, T + 8_000), ...done('1', '13', 'w2', T + 3_000, T + 4_000)];
    expect(checkFlow(h, limits).violations).toEqual([]);
    // Had it run again before the lease could have expired, that is a violation.
    const early = [...zombie, ...done('2', '11', 'w1', T, T + 8_000), ...done('1', '13', 'w2', T + 2_000, T + 4_000)];
    expect(checkFlow(early, limits).violations).toEqual(['cap: key k ran 3 handlers at once (cap 2)']);
  });
});
