// The non-determinism check of a new step under parallel branches: on replay, a branch that awaits
// a timer (or outside I/O) before reaching its stored step is slower than its siblings, whose
// stored steps answer at once, so a sibling's new step comes at a position past that stored step.
// That run replays correctly and must not block; a stored step that no branch reaches any more
// (renamed) still blocks the run before the new steps run. The first execution hangs and its
// lease runs out (as when its process is killed); another worker replays the run.

import { describe, expect, it } from 'vitest';
import type { Baton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { expireLease, runInState, useWorkflowEngines } from './harness.ts';

const db = useTestDatabase();

/** The hung execution's lease runs out, as when its process is killed: the reaper of `rescuer` takes the job back. */
const crash = (runId: string) => expireLease(db, runId);

describe('a new step next to a sibling branch that awaits a timer first', () => {
  const engines = useWorkflowEngines(db);
  const hung = () => engines.create({ queues: { default: 1 }, leaseMs: 120_000, heartbeatMs: 60_000, reaper: false, leader: false });
  const rescuer = () => engines.create({ queues: { default: 2 }, reaperIntervalMs: 50 });

  /**
   * Branch A awaits a 50 ms timer, then its step (position 1 in the first execution, since B's
   * first step is still running then); branch B's second step hangs in the first execution.
   * On replay B's first step answers at once and its second comes at position 1, before A's timer.
   */
  async function replayAfterHang(opts: { renameLateOnReplay: boolean; runs: string[] }) {
    const lateCommitted = engines.gate();
    const nextInside = engines.gate();
    const never = engines.gate();
    const define = (baton: Baton, replaying: boolean) =>
      baton.workflow('branches', async (ctx) => {
        return Promise.all([
          (async () => {
            await new Promise((resolve) => setTimeout(resolve, 50));
            return ctx.step(replaying && opts.renameLateOnReplay ? 'late-renamed' : 'late', () => {
              opts.runs.push('late');
              lateCommitted.resolve();
              return 'L';
            });
          })(),
          (async () => {
            const slow = await ctx.step('slow', async () => {
              opts.runs.push('slow');
              await lateCommitted.promise;
              return 'S';
            });
            const next = await ctx.step('next', async () => {
              opts.runs.push('next');
              if (!replaying) {
                nextInside.resolve();
                await never.promise;
              }
              return 'N';
            });
            return `${slow}${next}`;
          })(),
        ]);
      });
    const first = hung();
    define(first, false);
    await first.start();
    const { run } = await first.startWorkflow('branches');
    await nextInside.promise;
    const stored = await waitFor(async () => {
      const r = await first.workflows.getRun(run.id);
      return r?.steps.length === 2 ? r.steps : null;
    });
    // The first execution's positions: slow 0, late 1 (B's first step was still running).
    expect(stored.map((s) => [s.key, s.seq]).sort()).toEqual([
      ['late', 1],
      ['slow', 0],
    ]);
    await crash(run.id);
    const second = rescuer();
    define(second, true);
    await second.start();
    return { run, second };
  }

  it('replays correctly: the new step waits for the sibling to reach its stored step, and the run succeeds', async () => {
    const runs: string[] = [];
    const { run, second } = await replayAfterHang({ renameLateOnReplay: false, runs });
    const done = await waitFor(async () => {
      const r = await second.workflows.getRun(run.id);
      return r?.state === 'succeeded' || r?.state === 'blocked' ? r : null;
    });
    expect(done.blockedReason).toBeNull();
    expect(done.state).toBe('succeeded');
    expect(done.output).toEqual(['L', 'SN']);
    // The replay ran only "next": late and slow answered from the history.
    expect(runs).toEqual(['slow', 'late', 'next', 'next']);
  });

  it('still blocks a run whose stored step no branch reaches any more, before the new steps run', async () => {
    const runs: string[] = [];
    // The replaying worker runs code where A's step is renamed: no branch reaches "late" any more.
    const { run, second } = await replayAfterHang({ renameLateOnReplay: true, runs });
    const blocked = await runInState(second, run.id, 'blocked');
    expect(blocked.blockedReason).toMatchObject({ code: 'NON_DETERMINISM' });
    expect(blocked.blockedReason?.steps).toContain('late');
    // Neither new step ran in the replay: "next" ran only in the first execution.
    expect(runs).toEqual(['slow', 'late', 'next']);
    expect(blocked.steps.map((s) => s.key).sort()).toEqual(['late', 'slow']);
  });
});
