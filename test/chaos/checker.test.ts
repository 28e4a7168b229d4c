// The checker on synthetic histories: a clean run is valid, and each kind of
// violation (lost, unexpected, stale accepted, duplicate beyond the bound,
// dead letter, trouble with no fault active in a run that must be quiet, a cancel not
// honoured) is detected and named.
import { describe, expect, it } from 'vitest';
import { checkHistory, type FinalJob, formatResult } from './checker.ts';
import type { HistoryRecord } from './history.ts';

const job = (id: string, over: Partial<FinalJob> = {}): FinalJob => ({
  id,
  state: 'succeeded',
  leaseToken: `${Number(id) * 10}`,
  idempotencyKey: `k${id}`,
  resultToken: `${Number(id) * 10}`,
  errorTokens: [],
  ...over,
});
const enq = (id: string, status: 'ok' | 'indeterminate' = 'ok'): HistoryRecord => ({
  type: 'enqueue',
  key: `k${id}`,
  status,
  jobId: id,
  at: 0,
});
const start = (jobId: string, token: string, at: number, worker = 'w1'): HistoryRecord => ({ type: 'start', jobId, token, worker, at });
const end = (jobId: string, token: string, at: number, worker = 'w1'): HistoryRecord => ({
  type: 'end',
  jobId,
  token,
  worker,
  at,
  outcome: 'ok',
});
const write = (
  jobId: string,
  token: string,
  sentAt: number,
  rows: number | null,
  kind: 'complete' | 'fail' | 'heartbeat' = 'complete',
  worker = 'w1',
): HistoryRecord => ({
  type: 'write',
  kind,
  jobId,
  token,
  worker,
  rowsAffected: rows,
  sentAt,
  at: sentAt + 1,
});

/** Two jobs, each run once and completed under its token. */
function clean(): { final: FinalJob[]; history: HistoryRecord[] } {
  return {
    final: [job('1'), job('2')],
    history: [
      enq('1'),
      enq('2'),
      start('1', '10', 1),
      end('1', '10', 2),
      write('1', '10', 3, 1),
      start('2', '20', 4),
      end('2', '20', 5),
      write('2', '20', 6, 1),
    ],
  };
}

describe('checker', () => {
  it('accepts a clean history', () => {
    const { final, history } = clean();
    const r = checkHistory(final, history);
    expect(r.violations).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r).toMatchObject({ jobs: 2, acked: 2, lost: 0, duplicated: 0, staleAccepted: 0, executions: 2 });
    expect(r.fractions.okFrac).toBe(1);
    expect(formatResult(r)).toContain('VALID');
  });

  it('detects a lost job: acknowledged but missing, or never terminal', () => {
    const { final, history } = clean();
    const r1 = checkHistory([final[0]!], history);
    expect(r1.lost).toBe(1);
    expect(r1.ok).toBe(false);
    const r2 = checkHistory([final[0]!, job('2', { state: 'pending', resultToken: null })], history);
    expect(r2.lost).toBe(1);
    expect(r2.fractions.lost).toBe(0.5);
  });

  it('counts an indeterminate enqueue that ran as recovered, and a missing one as fine', () => {
    const { final, history } = clean();
    const h = history.map((x) => (x.type === 'enqueue' && x.key === 'k2' ? { ...x, status: 'indeterminate' as const } : x));
    expect(checkHistory(final, h)).toMatchObject({ ok: true, recovered: 1, indeterminate: 1 });
    const h2 = h.filter((x) => !('jobId' in x && x.jobId === '2'));
    expect(checkHistory([final[0]!], h2)).toMatchObject({ ok: true, lost: 0 });
  });

  it('detects unexpected jobs and two jobs for one key', () => {
    const { final, history } = clean();
    expect(checkHistory([...final, job('3')], history).unexpected).toBe(1);
    const twin = job('4', { idempotencyKey: 'k1' });
    const r = checkHistory([...final, twin], history);
    expect(r.unexpected).toBeGreaterThanOrEqual(1);
    expect(r.ok).toBe(false);
  });

  it('counts ambiguous acks (retried under the same key) and flags an ack that names another job than the key holds', () => {
    const { final, history } = clean();
    const retried: HistoryRecord[] = [
      ...history.filter((x) => x.type !== 'enqueue'),
      { type: 'enqueue', key: 'k1', status: 'indeterminate', at: 0 },
      { type: 'enqueue', key: 'k1', status: 'ok', jobId: '1', created: false, attempt: 2, at: 1 },
      { type: 'enqueue', key: 'k2', status: 'indeterminate', at: 0 },
      { type: 'enqueue', key: 'k2', status: 'ok', jobId: '2', created: true, attempt: 2, at: 1 },
    ];
    expect(checkHistory(final, retried)).toMatchObject({ ok: true, ambiguousAcks: 2, ambiguousCommitted: 1, unexpected: 0, lost: 0 });
    // A lost-ack window hits no execution: it adds nothing to the duplicate bound.
    const window: HistoryRecord = { type: 'fault', kind: 'api-ack', at: 0, until: 100, inFlight: [] };
    expect(checkHistory(final, [...retried, window]).duplicateBound).toBe(0);
    const wrong = retried.map((x) => (x.type === 'enqueue' && x.key === 'k2' && x.status === 'ok' ? { ...x, jobId: '7' } : x));
    const r = checkHistory(final, wrong);
    expect(r.ok).toBe(false);
    expect(r.violations.join('\n')).toMatch(/key k2: acknowledged as job 7/);
  });

  it('detects a stale complete accepted after a newer lease started (zombie write)', () => {
    const { final, history } = clean();
    // Job 1: token 10 paused, reaped, token 11 started at t=20; the zombie's complete under 10
    // is sent at t=30 and accepted.
    const h = [
      ...history.filter((x) => !(x.type === 'write' && x.jobId === '1')),
      start('1', '11', 20, 'w2'),
      write('1', '11', 25, 1, 'complete', 'w2'),
      write('1', '10', 30, 1, 'complete', 'w1'),
    ];
    const r = checkHistory([job('1', { leaseToken: '11', resultToken: '11' }), final[1]!], h);
    expect(r.staleAccepted).toBeGreaterThanOrEqual(1);
    expect(r.violations.join('\n')).toMatch(/stale/);
    expect(r.ok).toBe(false);
  });

  it('accepts the same zombie write when it was fenced off (0 rows)', () => {
    const { final, history } = clean();
    const fault: HistoryRecord = { type: 'fault', kind: 'sigstop', worker: 'w1', at: 15, inFlight: ['1'] };
    const h = [
      ...history.filter((x) => !(x.type === 'write' && x.jobId === '1')),
      fault,
      start('1', '11', 20, 'w2'),
      write('1', '11', 25, 1, 'complete', 'w2'),
      write('1', '10', 30, 0, 'complete', 'w1'),
    ];
    const r = checkHistory([job('1', { leaseToken: '11', resultToken: '11' }), final[1]!], h);
    expect(r.violations).toEqual([]);
    expect(r).toMatchObject({ staleAccepted: 0, duplicated: 1, duplicateExecutions: 1, duplicateBound: 1 });
  });

  it('detects a stale result in the table and two outcomes for one lease in the error history', () => {
    const { final, history } = clean();
    expect(checkHistory([job('1', { resultToken: '9' }), final[1]!], history).staleAccepted).toBe(1);
    expect(checkHistory([job('1', { errorTokens: ['7', '7'] }), final[1]!], history).staleAccepted).toBe(1);
  });

  it('accepts an older write whose answer arrived after a newer one (real-time order only)', () => {
    const { final, history } = clean();
    // fail under 20 sent at 5.5, committed early, answered late at 12; token 21 started at 8 and
    // its complete was answered at 10.
    const h = [
      ...history.filter((x) => !(x.type === 'write' && x.jobId === '2')),
      { type: 'write', kind: 'fail', jobId: '2', token: '20', worker: 'w1', rowsAffected: 1, sentAt: 5.5, at: 12 } as HistoryRecord,
      start('2', '21', 8, 'w2'),
      write('2', '21', 9, 1, 'complete', 'w2'),
    ];
    const r = checkHistory([final[0]!, job('2', { leaseToken: '21', resultToken: '21', errorTokens: ['20'] })], h);
    expect(r.violations).toEqual([]);
  });

  it('detects two accepted completes for one job', () => {
    const { final, history } = clean();
    const r = checkHistory(final, [...history, write('1', '10', 7, 1)]);
    expect(r.staleAccepted).toBeGreaterThanOrEqual(1);
  });

  it('detects duplicates beyond the bound: per job and in total', () => {
    const { final, history } = clean();
    const h = [...history, start('2', '21', 8, 'w2')];
    const r = checkHistory(final, h);
    expect(r.duplicateExecutions).toBe(1);
    expect(r.duplicateBound).toBe(0);
    expect(r.perJobBreaches).toEqual([{ jobId: '2', executions: 2, faultsHitting: 0 }]);
    expect(r.ok).toBe(false);
    // A kill of the worker holding job 2 covers one duplicate.
    const kill: HistoryRecord = { type: 'fault', kind: 'kill', worker: 'w1', at: 4.5, inFlight: ['2'] };
    expect(checkHistory(final, [...h, kill]).ok).toBe(true);
  });

  it('does not count a retry after an accepted failure as a duplicate', () => {
    const { final, history } = clean();
    const h = [
      ...history.filter((x) => !(x.type === 'write' && x.jobId === '2')),
      write('2', '20', 5.5, 1, 'fail'),
      start('2', '21', 8),
      write('2', '21', 9, 1),
    ];
    expect(checkHistory([final[0]!, job('2', { leaseToken: '21', resultToken: '21', errorTokens: ['20'] })], h)).toMatchObject({
      ok: true,
      duplicated: 0,
    });
  });

  it('counts jobs started inside a fault window as hit by it', () => {
    const { final, history } = clean();
    const loss: HistoryRecord = { type: 'fault', kind: 'loss', at: 3.5, until: 4.5, inFlight: [] };
    const r = checkHistory(final, [...history, loss, start('2', '21', 8, 'w2')]);
    expect(r).toMatchObject({ ok: true, duplicateBound: 1 });
  });

  it("credits a worker's own stall record to the jobs it had in flight, and a pause's echo only once", () => {
    const { final, history } = clean();
    // Job 1 ran again on w2 after w1 stalled holding it (its complete under 10 never came).
    const rerun = [...history.filter((x) => !(x.type === 'write' && x.jobId === '1')), start('1', '11', 7, 'w2'), write('1', '11', 8, 1)];
    const final1 = [job('1', { leaseToken: '11', resultToken: '11' }), final[1]!];
    expect(checkHistory(final1, rerun).ok).toBe(false);
    const stall: HistoryRecord = { type: 'fault', kind: 'stall', worker: 'w1', at: 2, until: 3.5, inFlight: ['1'] };
    expect(checkHistory(final1, [...rerun, stall])).toMatchObject({ ok: true, duplicateBound: 1, faults: { stall: 1 } });
    // The stall inside a SIGSTOP pause of w1 is that pause: the bound does not double.
    const pause: HistoryRecord = { type: 'fault', kind: 'pause', worker: 'w1', at: 1.5, until: 3.5, inFlight: ['1'] };
    expect(checkHistory(final1, [...rerun, pause, stall])).toMatchObject({ ok: true, duplicateBound: 1, faults: { pause: 1 } });
    // A pause of another worker does not swallow w1's stall.
    const otherPause: HistoryRecord = { ...pause, worker: 'w3', inFlight: [] };
    expect(checkHistory(final1, [...rerun, otherPause, stall])).toMatchObject({
      ok: true,
      duplicateBound: 1,
      faults: { pause: 1, stall: 1 },
    });
  });

  it('flags dead letters unless allowed', () => {
    // Job 2's run failed (no completion accepted), and it was dead-lettered.
    const history = clean().history.filter((x) => !(x.type === 'write' && x.jobId === '2'));
    const final = [job('1'), job('2', { state: 'dead_lettered', resultToken: null })];
    expect(checkHistory(final, history).violations.join()).toMatch(/dead-lettered/);
    expect(checkHistory(final, history, { allowDeadLetters: true }).ok).toBe(true);
  });

  it('ignores errored writes for acceptance but reports them', () => {
    const { final, history } = clean();
    const r = checkHistory(final, [...history, write('1', '10', 2.5, null)]);
    expect(r.ok).toBe(true);
    expect(r.writes.unknown).toBe(1);
  });

  it('counts engine errors and unknown enqueue outcomes that no fault explains, and requires none when asked', () => {
    const { final, history } = clean();
    const err = (at: number): HistoryRecord => ({
      type: 'error',
      worker: 'producer',
      where: 'notify',
      code: 'DB_UNAVAILABLE',
      message: 'database unavailable',
      at,
    });
    const fault: HistoryRecord = { type: 'fault', kind: 'pg-restart', at: 100_000, until: 101_000, inFlight: [] };
    // One error inside the restart's window (explained), one long after it, one unknown enqueue with no fault near.
    const noisy = [...history, fault, err(103_000), err(200_000), { ...enq('2', 'indeterminate'), at: 300_000 } as HistoryRecord];
    const reported = checkHistory(final, noisy);
    expect(reported.unexplained).toMatchObject({ errors: 1, indeterminate: 1 });
    expect(reported.ok).toBe(true);
    expect(formatResult(reported)).toContain('with no fault active: engine errors 1, unknown enqueue outcomes 1');
    const quiet = checkHistory(final, noisy, { requireQuiet: true });
    expect(quiet.ok).toBe(false);
    expect(quiet.violations.join('\n')).toMatch(/not quiet: 1 engine error\(s\) and 1 unknown enqueue outcome\(s\)/);
    expect(checkHistory(final, history, { requireQuiet: true }).ok).toBe(true);
  });

  describe('cancels', () => {
    const cancel = (
      jobId: string,
      status: 'requested' | 'cancelled' | 'refused' | 'indeterminate',
      token: string | null,
      at = 3.5,
    ): HistoryRecord => ({
      type: 'cancel',
      jobId,
      status,
      token,
      sentAt: at - 0.1,
      at,
    });
    const stopped = (jobId: string, token: string, at: number): HistoryRecord => ({
      type: 'end',
      jobId,
      token,
      worker: 'w1',
      at,
      outcome: 'cancelled',
    });

    it('accepts each honoured cancel: stopped (cancelled), finished anyway (succeeded), reaped, cancelled while pending, refused', () => {
      const { final, history } = clean();
      const h: HistoryRecord[] = [
        ...history.filter((x) => !('jobId' in x && x.jobId === '2' && x.type !== 'enqueue')),
        // Job 1 finished anyway: its request stands beside its success.
        cancel('1', 'requested', '10', 1.5),
        // Job 2 stopped on the signal; its fail write (the cancel) was accepted.
        start('2', '20', 4),
        cancel('2', 'requested', '20', 4.5),
        stopped('2', '20', 5),
        write('2', '20', 5.5, 1, 'fail'),
        // Job 3 was cancelled while pending: never started.
        enq('3'),
        cancel('3', 'cancelled', null, 1),
        // Job 4: running when asked, its worker died; the reaper cancelled it (no write accepted).
        enq('4'),
        start('4', '40', 1),
        cancel('4', 'requested', '40', 2),
        // Job 5 had finished: refused.
        enq('5'),
        start('5', '50', 1),
        end('5', '50', 2),
        write('5', '50', 3, 1),
        cancel('5', 'refused', null, 4),
      ];
      const f = [
        final[0]!,
        job('2', { state: 'cancelled', resultToken: null, errorTokens: ['20'] }),
        job('3', { state: 'cancelled', leaseToken: null, resultToken: null }),
        job('4', { state: 'cancelled', resultToken: null, errorTokens: ['40'] }),
        job('5'),
      ];
      const r = checkHistory(f, h);
      expect(r.violations).toEqual([]);
      expect(r.cancels).toEqual({
        requested: 3,
        cancelled: 1,
        refused: 1,
        unknown: 0,
        endedCancelled: 2,
        endedSucceeded: 1,
        handlersStopped: 1,
      });
      expect(formatResult(r)).toContain('cancels: 3 requested while running (ended cancelled 2, succeeded anyway 1)');
    });

    it('detects a job started again (retried or re-claimed) after its cancel was recorded', () => {
      const { final, history } = clean();
      const h = [
        ...history.filter((x) => !(x.type === 'write' && x.jobId === '2')),
        cancel('2', 'requested', '20', 4.5),
        write('2', '20', 5.5, 1, 'fail'),
        start('2', '21', 8),
        write('2', '21', 9, 1),
      ];
      const r = checkHistory([final[0]!, job('2', { leaseToken: '21', resultToken: '21', errorTokens: ['20'] })], h);
      expect(r.ok).toBe(false);
      expect(r.violations.join('\n')).toMatch(
        /cancel: job 2 started again under token 21 after its cancel was recorded \(under token 20\)/,
      );
      const pending = [...history, cancel('1', 'cancelled', null, 0.5)];
      expect(checkHistory([job('1', { state: 'cancelled', resultToken: null }), final[1]!], pending).violations.join('\n')).toMatch(
        /job 1 started again under token 10 after its cancel was recorded \(never leased\)/,
      );
    });

    it('accepts a cancel of a job that went back to pending after a lost lease (its start came before the cancel)', () => {
      const { final, history } = clean();
      const h = [
        ...history.filter((x) => !(x.type === 'write' && x.jobId === '1')),
        write('1', '10', 3, 0),
        cancel('1', 'cancelled', null, 3.5),
      ];
      expect(checkHistory([job('1', { state: 'cancelled', leaseToken: null, resultToken: null }), final[1]!], h).violations).toEqual([]);
    });

    it('detects a final state that does not match: cancelled although completed, cancelled unasked, dead-lettered with a request', () => {
      const { final, history } = clean();
      expect(
        checkHistory([job('1', { state: 'cancelled' }), final[1]!], [...history, cancel('1', 'requested', '10', 1.5)]).violations.join(
          '\n',
        ),
      ).toMatch(/job 1 is cancelled, but its handler's completion under token 10 was accepted/);
      expect(checkHistory([final[0]!, job('2', { state: 'cancelled', resultToken: null })], history).violations.join('\n')).toMatch(
        /job 2 is cancelled, but no cancel of it was accepted/,
      );
      const dead = checkHistory(
        [final[0]!, job('2', { state: 'dead_lettered', resultToken: null })],
        [...history, cancel('2', 'requested', '20', 4.5)],
        {
          allowDeadLetters: true,
        },
      );
      expect(dead.violations.join('\n')).toMatch(/job 2 had a cancel request but ended dead_lettered/);
      // An unanswered cancel may have been recorded: a cancelled job is then explained.
      expect(
        checkHistory(
          [final[0]!, job('2', { state: 'cancelled', resultToken: null })],
          [...history.filter((x) => !(x.type === 'write' && x.jobId === '2')), cancel('2', 'indeterminate', null)],
        ).ok,
      ).toBe(true);
    });
  });
});
