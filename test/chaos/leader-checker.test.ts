// The paused-leader checker must be able to fail: each rule is broken once here, on a synthetic
// history of a run where w0 led under epoch 1, was stopped mid-tick at 10 s for 30 s, and w1 took
// over under epoch 2 at 13 s.

import { describe, expect, it } from 'vitest';
import type { HistoryRecord } from './history.ts';
import { checkLeader, type LeaderCheckInput } from './leader-checker.ts';

const T = Date.parse('2026-01-01T00:00:00Z');
const P = 2_000;
const ids = { fire_all: '1', fire_once: '2', skip: '3' } as const;
const key = (id: string, at: number) => `cron:${id}:${new Date(at).toISOString()}`;
let seq = 0;

/** One job per occurrence per schedule, made `late` ms after its instant, started and succeeded. */
function occurrences(late: (at: number) => number): HistoryRecord[] {
  const out: HistoryRecord[] = [];
  for (let at = T; at <= T + 60_000; at += P) {
    for (const id of Object.values(ids)) {
      const jobId = String(++seq);
      out.push({
        type: 'start',
        jobId,
        token: '1',
        worker: 'w1',
        at: at + late(at) + 5,
        key: key(id, at),
        runAt: at,
        createdAt: at + late(at),
      });
      out.push({ type: 'end', jobId, token: '1', worker: 'w1', at: at + late(at) + 30, outcome: 'ok' });
    }
  }
  return out;
}

function run(): LeaderCheckInput {
  const history: HistoryRecord[] = [
    { type: 'leadership', worker: 'w0', leader: true, at: T - 1_000 },
    { type: 'leader-write', kind: 'acquire', worker: 'w0', epoch: '1', changed: true, sentAt: T - 1_010, at: T - 1_000 },
    { type: 'leader-write', kind: 'job-purge', worker: 'w0', epoch: '1', changed: true, sentAt: T + 5_000, at: T + 5_010 },
    { type: 'leadership', worker: 'w1', leader: true, at: T + 13_000 },
    { type: 'leader-write', kind: 'acquire', worker: 'w1', epoch: '2', changed: true, sentAt: T + 12_990, at: T + 13_000 },
    // w0 wakes at 40 s: it no longer leads, and its late fenced transaction held nothing.
    { type: 'leadership', worker: 'w0', leader: false, at: T + 40_001 },
    { type: 'leader-write', kind: 'fence', worker: 'w0', epoch: '1', changed: false, sentAt: T + 40_002, at: T + 40_004 },
    // The 10-13 s gap: occurrences 10 and 12 s are fired up to 3 s late, under the 10 s threshold.
    ...occurrences((at) => (at >= T + 10_000 && at < T + 13_000 ? T + 13_000 - at : 20)),
  ];
  return {
    history,
    table: [],
    schedules: { ...ids },
    periodMs: P,
    from: T,
    to: T + 60_000,
    thresholdMs: 10_000,
    marginMs: 500,
    pauses: [{ worker: 'w0', kind: 'mid-tick', at: T + 10_000, until: T + 40_000 }],
    leaderLeaseMs: 3_000,
    renewMs: 300,
    takeoverSlackMs: 1_500,
  };
}

describe('paused-leader chaos checker', () => {
  it('passes a run where the pause was taken over in time and the late write changed nothing', () => {
    const r = checkLeader(run());
    expect(r.violations).toEqual([]);
    expect(r.pauses).toEqual([
      {
        worker: 'w0',
        kind: 'mid-tick',
        takeoverMs: 3_000,
        newLeader: 'w1',
        newEpoch: '2',
        oldEpoch: '1',
        lateWrites: 1,
        firstOccurrenceMs: 3_000,
      },
    ]);
    expect(r.occurrences).toBe(31);
    expect(r.deposedWrites).toBe(1);
  });

  it('fails an occurrence fired twice (a job deleted by retention made again), and one lost', () => {
    const twice = run();
    twice.history.push({
      type: 'start',
      jobId: 'again',
      token: '9',
      worker: 'w0',
      at: T + 40_010,
      key: key('2', T + 10_000),
      createdAt: T + 40_005,
    });
    twice.history.push({ type: 'end', jobId: 'again', token: '9', worker: 'w0', at: T + 40_040, outcome: 'ok' });
    expect(checkLeader(twice).violations).toEqual([
      `fire_once: occurrence 2026-01-01T00:00:10.000Z fired twice (jobs ${twice.history
        .filter((r) => r.type === 'start' && r.key === key('2', T + 10_000))
        .map((r) => (r as { jobId: string }).jobId)
        .join(', ')})`,
    ]);
    const lost = run();
    lost.history = lost.history.filter((r) => !(r.type === 'start' && r.key === key('3', T + 12_000)));
    expect(checkLeader(lost).violations).toEqual([
      'skip: occurrence 2026-01-01T00:00:12.000Z was reached on time (1000 ms) but has no job (lost)',
    ]);
  });

  it('fails a takeover slower than the bound, or none', () => {
    const slow = run();
    slow.leaderLeaseMs = 1_000;
    expect(checkLeader(slow).violations).toEqual(['pause of w0: takeover took 3000 ms (bound 2800 ms)']);
    const none = run();
    none.history = none.history.filter((r) => !(r.type === 'leadership' && r.worker === 'w1'));
    expect(checkLeader(none).violations).toContain('pause of w0 at 2026-01-01T00:00:10.000Z: no other process took over');
  });

  it('fails a paused leader that acts on waking: a late write that changed something, or reporting that it leads', () => {
    const wrote = run();
    const fence = wrote.history.find((r) => r.type === 'leader-write' && r.kind === 'fence') as { changed: boolean };
    fence.changed = true;
    expect(checkLeader(wrote).violations).toEqual([
      'w0: a fence sent under epoch 1 after a takeover changed something (stale leader write)',
      'pause of w0: its late fence under epoch 1 changed something',
    ]);
    const leads = run();
    (leads.history.find((r) => r.type === 'leadership' && r.worker === 'w0' && !r.leader) as { leader: boolean }).leader = true;
    expect(checkLeader(leads).violations).toEqual(['pause of w0: its first leadership report after waking says it leads']);
  });

  it('fails a vacuous run: no late write after a mid-tick pause, or nothing deleted by retention', () => {
    const quiet = run();
    quiet.history = quiet.history.filter((r) => !(r.type === 'leader-write' && r.kind === 'fence'));
    expect(checkLeader(quiet).violations).toEqual([
      'vacuous: w0, stopped between reading due schedules and firing them, sent no late fenced transaction',
    ]);
    const kept = run();
    kept.table = kept.history.flatMap((r) => (r.type === 'start' && r.key ? [{ id: r.jobId, key: r.key, state: 'succeeded' }] : []));
    expect(checkLeader(kept).violations).toEqual(['vacuous: retention deleted no cron job during the run']);
  });
});
