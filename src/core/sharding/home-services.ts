// What lives on the home cluster of a sharded Baton, seen through it: workflow runs, whose
// driving job is named `<home>:<id>` like every job it answers, and schedules, which enqueue on
// the home cluster only and so may not target a queue another cluster holds.

import { BatonError } from '../../types/errors.ts';
import type { ScheduleInput, SchedulePatch } from '../../types/schedule.ts';
import type { WorkflowRunsApi } from '../../types/workflow.ts';
import type { CronApi } from '../cron/api.ts';
import { clusterOf, DEFAULT_QUEUE, type ShardRouting, toRef } from './routing.ts';

/** A run of the home cluster, its driving job named `<home>:<id>` like every job a sharded Baton answers. */
export const refRun = <T extends { jobId: string | null }>(home: string, run: T): T =>
  run.jobId === null ? run : { ...run, jobId: toRef(home, run.jobId) };

/** The home cluster's runs, as refRun names them. */
export function homeRuns(home: string, runs: WorkflowRunsApi): WorkflowRunsApi {
  const ref = <T extends { jobId: string | null }>(run: T): T => refRun(home, run);
  return {
    getRun: async (runId, opts) => {
      const run = await runs.getRun(runId, opts);
      return run === null ? null : ref(run);
    },
    listRuns: async (filter) => (await runs.listRuns(filter)).map(ref),
    cancelRun: async (runId) => ref(await runs.cancelRun(runId)),
    replayRun: async (runId) => ref(await runs.replayRun(runId)),
    countRunsByState: () => runs.countRunsByState(),
    names: () => runs.names(),
  };
}

/**
 * The home cluster's schedules; one whose jobs go to a queue of another cluster is
 * INVALID_ARGUMENT (its cron enqueues on the home database, where nothing works that queue).
 */
export function homeCron(r: ShardRouting, home: string, cron: CronApi): CronApi {
  const check = (queue: string | undefined) => {
    if (queue === undefined) return;
    const at = clusterOf(r, queue);
    if (at !== null && at !== home) {
      throw new BatonError('INVALID_ARGUMENT', `queue ${queue} is on cluster ${at}; schedules run on the home cluster ${home}`, {
        details: { field: 'queue' },
      });
    }
  };
  return {
    upsert: async (input: ScheduleInput) => {
      if (input.workflow === undefined) check(input.queue ?? DEFAULT_QUEUE);
      return cron.upsert(input);
    },
    get: (id, opts) => cron.get(id, opts),
    list: (opts) => cron.list(opts),
    update: async (id, patch: SchedulePatch) => {
      check(patch.queue);
      return cron.update(id, patch);
    },
    pause: (id) => cron.pause(id),
    resume: (id) => cron.resume(id),
    remove: (id) => cron.remove(id),
    preview: (p) => cron.preview(p),
  };
}
