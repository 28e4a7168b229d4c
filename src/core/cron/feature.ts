// Cron as a feature of the engine: baton.cron, the declared schedules reconciled at start() in
// every process, the ticker run by the leader alone (each occurrence written in a transaction
// fenced by the lease's epoch), and the NOTIFY route that wakes it when a schedule changes.

import type { EngineContext, FeatureParts } from '../engine-context.ts';
import { cronChannelFor } from '../notifier.ts';
import { service } from '../service.ts';
import type { Workflows } from '../workflow/service.ts';
import { CronService } from './service.ts';

/** `workflows` starts the runs of workflow schedules (in the ticker's fenced transaction) and checks their names. */
export function cronFeature(ctx: EngineContext, workflows: Workflows): { cron: CronService; parts: FeatureParts } {
  const { config, deps } = ctx;
  const cron = new CronService({
    store: deps.scheduleStore,
    adminStore: deps.adminScheduleStore,
    misfireThresholdMs: config.cronMisfireThresholdMs,
    maxAttemptsDefault: config.maxAttemptsDefault,
    // Without LISTEN (poll mode, or no queues: no listener) a change elsewhere is seen at the
    // next poll; with it, a lost NOTIFY within a minute.
    maxSleepMs: config.dispatch === 'notify' && Object.keys(config.queues).length > 0 ? 60_000 : config.pollIntervalMs,
    // In the ticker's fenced transaction; it wakes the queues itself once that has committed.
    enqueue: (specs, client) => ctx.enqueueMany(specs, { client, notify: false }),
    resolveWorkflow: (name) => workflows.resolve(name),
    workflowInputRefusal: (name, input) => workflows.inputRefusal(name, input),
    startRun: async (occ, target, client) => {
      const res = await workflows.startOn(client, {
        name: occ.workflow,
        target,
        tenantId: occ.tenantId,
        input: JSON.stringify(occ.input ?? null),
        idempotencyKey: occ.idempotencyKey,
      });
      return { created: !res.duplicate };
    },
    wake: (queues) => ctx.wakeQueues(queues),
    leaderEpoch: () => ctx.leaderEpoch(),
    fenced: (epoch, fn) => {
      const lease = ctx.lease;
      if (!lease) return Promise.resolve({ held: false as const });
      // Idle past the local deadline means paused: the server ends it before the lease can expire.
      return deps.leaderStore.leaderFenced({ epoch, idleMs: lease.fenceMs, stillLeader: () => lease.epoch() === epoch }, fn);
    },
    log: ctx.log,
    onError: ctx.onError('cron'),
    declared: deps.schedules?.declared ?? [],
    pruneUndeclared: deps.schedules?.pruneUndeclared ?? false,
  });
  const wake = () => cron.wake();
  return {
    cron,
    parts: {
      // First of all: a start() that cannot write its declared schedules fails before any work starts.
      services: [service('cron schedules', { start: () => cron.reconcile() })],
      leaderServices: [cron],
      routes: new Map([[cronChannelFor(config.schema), wake]]),
      onListenerConnected: wake,
    },
  };
}
