// The debounce checker must fail on each violation it names, and pass a clean history.

import { describe, expect, it } from 'vitest';
import { checkDebounce, type DebounceJob } from './debounce-checker.ts';

const job = (id: string, seq: number, over: Partial<DebounceJob> = {}): DebounceJob => ({
  id,
  state: 'succeeded',
  key: 'k',
  seq,
  ranSeq: seq,
  ...over,
});

describe('checkDebounce', () => {
  it('passes folds whose last payload ran', () => {
    const r = checkDebounce({
      acks: [
        { key: 'k', seq: 1, jobId: '1' },
        { key: 'k', seq: 2, jobId: '1' },
        { key: 'k', seq: 3, jobId: '2' },
      ],
      jobs: [job('1', 2), job('2', 3)],
      doublePending: [],
    });
    expect(r).toMatchObject({ ok: true, folded: 1 });
  });

  it('fails a fold the handler did not run (an older payload ran)', () => {
    const r = checkDebounce({ acks: [{ key: 'k', seq: 2, jobId: '1' }], jobs: [job('1', 2, { ranSeq: 1 })], doublePending: [] });
    expect(r.violations).toEqual([expect.stringMatching(/^lost payload: enqueue k#2/)]);
  });

  it('fails two unclaimed pending jobs of one key, an unfinished job, a missing job and a crossed key', () => {
    const r = checkDebounce({
      acks: [
        { key: 'k', seq: 1, jobId: '9' },
        { key: 'other', seq: 1, jobId: '1' },
      ],
      jobs: [job('1', 1), job('2', 1, { state: 'pending', ranSeq: null })],
      doublePending: [{ at: 0, key: 'k', n: 2 }],
    });
    expect(r.violations.map((v) => v.split(':')[0])).toEqual(['two pending', 'unfinished', 'lost', 'crossed']);
  });
});
