// The reaper's schedule, without a database: the leader sweeps on every tick, a
// follower on one tick in FOLLOWER_SWEEP_EVERY, so a stalled leader delays maintenance
// but never stops it; a new leader sweeps at once.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseEngineConfig } from '../../src/core/config.ts';
import { FOLLOWER_SWEEP_EVERY, Reaper } from '../../src/core/reaper.ts';
import type { Executor } from '../../src/driver/executor.ts';

function countingReaper(isLeader: () => boolean) {
  const leaderEpoch = () => (isLeader() ? '1' : null);
  let sweeps = 0;
  const executor = {
    workerSweep: async () => undefined,
    jobReap: async () => {
      sweeps++;
      return [];
    },
    workerPrune: async () => undefined,
  } as unknown as Executor;
  const config = parseEngineConfig({ reaperIntervalMs: 100 }, () => 'w');
  const reaper = new Reaper({ executor, config, lockNamespace: 1, leaderEpoch, onReaped: () => undefined, onError: () => undefined });
  return { reaper, sweeps: () => sweeps };
}

describe('Reaper schedule', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each([
    ['leader', true, 2 * FOLLOWER_SWEEP_EVERY],
    ['follower', false, 2],
  ] as const)('%s: sweeps on %s', async (_who, leader, expected) => {
    vi.useFakeTimers();
    const { reaper, sweeps } = countingReaper(() => leader);
    reaper.start();
    for (let i = 0; i < 2 * FOLLOWER_SWEEP_EVERY; i++) await vi.advanceTimersByTimeAsync(100);
    await reaper.stop();
    expect(sweeps()).toBe(expected);
  });

  it('kick() sweeps at once (a new leader does not wait for the next tick), and not before start()', async () => {
    vi.useFakeTimers();
    const { reaper, sweeps } = countingReaper(() => true);
    reaper.kick();
    await vi.advanceTimersByTimeAsync(0);
    expect(sweeps()).toBe(0);
    reaper.start();
    reaper.kick();
    await vi.advanceTimersByTimeAsync(0);
    expect(sweeps()).toBe(1);
    await reaper.stop();
  });
});
