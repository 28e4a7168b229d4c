// The workflow chaos checker must be able to fail: each rule is broken once here.

import { describe, expect, it } from 'vitest';
import type { EffectRecord, FaultRecord, HistoryRecord } from './history.ts';
import { type CheckedRun, checkOutputsByKey, checkWorkflows } from './workflow-checker.ts';

const T = 1_000_000;
const KEYS = ['a', 'b'];
const effect = (runId: string, key: string, token: string, worker: string, phase: 'start' | 'end', at: number): EffectRecord => ({
  type: 'wf-effect',
  phase,
  runId,
  key,
  token,
  worker,
  at,
});
const ran = (runId: string, key: string, token: string, worker: string, at: number) => [
  effect(runId, key, token, worker, 'start', at),
  effect(runId, key, token, worker, 'end', at + 100),
];
const run = (id: string, token: string, state = 'succeeded'): CheckedRun => ({
  id,
  state,
  steps: new Map(KEYS.map((k, i) => [k, { token, worker: 'w0', committedAt: T + 200 + i * 200 }])),
});
const base = (): HistoryRecord[] => [...ran('1', 'a', '10', 'w0', T), ...ran('1', 'b', '10', 'w0', T + 200)];
const check = (runs: CheckedRun[], history: HistoryRecord[]) =>
  checkWorkflows({ started: ['1'], stepKeys: KEYS, runs, history, leaseMs: 1_000 });

describe('workflow chaos checker', () => {
  it('passes a clean run, and a second effect cut off by a kill of its worker', () => {
    expect(check([run('1', '10')], base()).violations).toEqual([]);
    // Lease 9 on w1 ran step a's effect and was killed before its commit; lease 10 ran it again and committed.
    const kill: FaultRecord = { type: 'fault', kind: 'kill', worker: 'w1', at: T - 50, inFlight: [] };
    const r = check([run('1', '10')], [...ran('1', 'a', '9', 'w1', T - 300), kill, ...base()]);
    expect(r.violations).toEqual([]);
    expect(r).toMatchObject({ duplicateEffects: 1, reexecutions: 1 });
  });

  it('fails a lost run, an unfinished run, and a step committed by a lease whose effect never completed', () => {
    expect(check([], base()).violations).toEqual(['run 1: lost (started, not in the database)']);
    expect(check([run('1', '10', 'dead_lettered')], base()).violations).toEqual(['run 1: dead_lettered, not succeeded']);
    expect(check([run('1', '11')], base()).violations).toContain('run 1 step a: committed by lease 11, whose effect never completed');
  });

  it('fails a side effect completed twice with no fault, and a re-execution no fault explains', () => {
    const r = check([run('1', '10')], [...ran('1', 'a', '9', 'w1', T - 300), ...base()]);
    expect(r.violations).toEqual([
      'run 1 step a: side effect completed twice (leases 9 and 10) with no fault on w1 between',
      'run 1 step a: started 2 times with only 0 fault(s) that could interrupt it',
    ]);
    // A fault on another worker explains nothing.
    const elsewhere: FaultRecord = { type: 'fault', kind: 'pause', worker: 'w2', at: T - 50, until: T + 10, inFlight: [] };
    expect(check([run('1', '10')], [...ran('1', 'a', '9', 'w1', T - 300), elsewhere, ...base()]).ok).toBe(false);
  });

  it('fails a parallel run whose output is not its committed step memos', () => {
    const memo = { token: '10', worker: 'w0' };
    expect(checkOutputsByKey([{ ...run('1', '10'), output: { a: memo, b: memo } }], KEYS)).toEqual([]);
    // Step b's output in the run is another lease's (a step that ran again and won after its memo).
    expect(checkOutputsByKey([{ ...run('1', '10'), output: { a: memo, b: { token: '9', worker: 'w1' } } }], KEYS)).toEqual([
      'run 1 step b: output {"token":"9","worker":"w1"} is not its committed memo {"token":"10","worker":"w0","committedAt":1000400}',
    ]);
    // An unfinished run has no output to check.
    expect(checkOutputsByKey([{ ...run('1', '10', 'running'), output: null }], KEYS)).toEqual([]);
  });
});
