// The engine: a Baton composed of its features (features.ts: cron, retention, outbox, workflows,
// each adding its API and its services) around the worker's claim loops, the reaper and the leader lease.
// Owns the lifecycle: start() starts one list of services in order, stop() stops it in
// reverse (the order, and why, is at #services); the claim protocol lives in claimer.ts.
//
// Terminology. A *job* is one row; a *queue* groups jobs for claiming; a *lease*
// is a worker's time-limited claim on a job, identified by its fencing *token*;
// an *attempt* is spent at claim time; a *worker* is one engine process holding
// a presence lock; a *dispatcher* is its claim loop for one queue; the *leader* is the one
// process holding the leader lease (leader-lease.ts), which runs cron, retention and pruning.

import type { MigrateResult } from '../driver/migrations.ts';
import { BatonError } from '../types/errors.ts';
import type { EnqueueResult, JobSpec } from '../types/job.ts';
import type { WorkflowFn, WorkflowOptions } from '../types/workflow.ts';
import { type AdminApi, createAdmin } from './admin.ts';
import type { Baton, EngineStats, EnqueueOptions } from './baton.ts';
import { systemClock } from './clock.ts';
import type { EngineConfig } from './config.ts';
import type { CronApi } from './cron/api.ts';
import type { CronService } from './cron/service.ts';
import type { EngineContext, EngineDeps } from './engine-context.ts';
import { EngineEventEmitter } from './events.ts';
import { composeFeatures } from './features.ts';
import type { Handler } from './handler.ts';
import { LeaderLease } from './leader-lease.ts';
import { Leadership } from './leadership.ts';
import type { Logger } from './logger.ts';
import type { OutboxService } from './outbox/service.ts';
import { Producer } from './producer.ts';
import { Reaper } from './reaper.ts';
import { type Service, ServiceGroup, service } from './service.ts';
import { noTracing } from './tracing.ts';
import { type EngineCounters, Worker } from './worker.ts';
import { type WorkflowBuilder, workflowBuilder } from './workflow/builder.ts';
import type { Workflows } from './workflow/service.ts';

export type { EngineDeps } from './engine-context.ts';

export class Engine implements Baton {
  readonly config: EngineConfig;
  readonly admin: AdminApi;
  readonly cron: CronApi;
  readonly events: EngineEventEmitter;
  readonly workflows: Workflows;
  readonly outbox: OutboxService;
  readonly #d: EngineDeps;
  readonly #log: Logger;
  readonly #producer: Producer;
  readonly #cron: CronService;
  /** Null with no queues (a producer-only process claims nothing). */
  readonly #worker: Worker | null;
  readonly #reaper: Reaper;
  /** Null when this process may not lead (leader: false or reaper: false). */
  readonly #lease: LeaderLease | null;
  readonly #leadership: Leadership | null;
  readonly #services: ServiceGroup;
  /** The drain deadline of the stop() in progress (the worker reads it as it drains). */
  #drainMs: number;
  #started = false;
  #stopping = false;
  #stopped: Promise<void> | null = null;
  readonly #counters: EngineCounters = {
    claimed: 0,
    succeeded: 0,
    retried: 0,
    deadLettered: 0,
    cancelled: 0,
    cancelSignalled: 0,
    fencedWrites: 0,
    leasesLost: 0,
    reclaimed: 0,
    strandedReleased: 0,
  };

  constructor(deps: EngineDeps) {
    this.#d = deps;
    const config = deps.config;
    this.config = config;
    this.#drainMs = config.drainMs;
    const log = deps.logger.child({ worker: config.workerId });
    this.#log = log;
    const clock = deps.clock ?? systemClock;
    const tracing = deps.tracing ?? noTracing;
    this.events = new EngineEventEmitter((event, err) => log.warn({ err, event }, 'baton: an event listener threw'));
    const onError = (where: string) => (error: unknown) => {
      log.warn({ err: error, where }, 'baton: background operation failed');
      this.events.emit('error', { where, error });
    };
    const lease =
      config.reaper && config.leader
        ? new LeaderLease({
            store: deps.leaderStore,
            holder: config.workerId,
            leaseMs: config.leaderLeaseMs,
            clock,
            lockNamespace: deps.lockNamespace,
            lockKey: () => this.#worker?.lockKey ?? null,
            onChange: (leader) => this.#leadershipChanged(leader),
            onError: onError('leader-lease'),
          })
        : null;
    this.#lease = lease;
    const leaderEpoch = () => lease?.epoch() ?? null;
    /** The handlers the runner looks up: the given ones, plus one per defined workflow. */
    const handlers: Record<string, Handler> = { ...deps.handlers };
    this.#producer = new Producer({
      config,
      executor: deps.executor,
      events: this.events,
      wakeLocal: (queues) => this.#worker?.wakeLocal(queues),
      onNotifyError: onError('notify'),
      tracing,
    });
    const ctx: EngineContext = {
      deps,
      config,
      log,
      events: this.events,
      handlers,
      lease,
      leaderEpoch,
      enqueueMany: (specs, opts = {}) => this.#producer.enqueueMany(specs, opts),
      wakeQueues: (queues) => this.#wakeQueues(queues),
      onError,
    };

    // The features (features.ts): their services, leader services and NOTIFY routes join the
    // lifecycle below through their FeatureParts.
    const composed = composeFeatures(ctx);
    const features = composed.parts;
    this.#cron = composed.cron;
    this.cron = composed.cron.api;
    this.outbox = composed.outbox;
    this.workflows = composed.workflows;

    this.#worker =
      Object.keys(config.queues).length > 0
        ? new Worker({
            config,
            executor: deps.executor,
            clock,
            tracing,
            handlers,
            log,
            events: this.events,
            counters: this.#counters,
            createPresence: deps.createPresence,
            createListener: deps.createListener,
            warmPool: deps.warmPool,
            routes: new Map(features.flatMap((f) => [...(f.routes ?? [])])),
            onListenerConnected: () => {
              for (const f of features) f.onListenerConnected?.();
            },
            wakeQueues: (queues) => this.#wakeQueues(queues),
            onError,
            drainMs: () => this.#drainMs,
          })
        : null;
    this.admin = createAdmin(deps.adminExecutor, (q) => this.#wakeQueues([q]), {
      onCancelRequested: (job) => this.#worker?.cancelLocal(job),
    });
    this.#reaper = new Reaper({
      executor: deps.executor,
      config,
      leaderEpoch,
      lockNamespace: deps.lockNamespace,
      onReaped: (jobs) => {
        this.#counters.reclaimed += jobs.length;
        const fast = jobs.some((j) => !j.expired);
        this.events.emit('reaped', { count: jobs.length, fast });
        log.info({ count: jobs.length, fast }, 'baton: reclaimed leases');
        this.#wakeQueues(jobs.filter((j) => j.state === 'pending').map((j) => j.queue));
      },
      onError: onError('reaper'),
    });
    this.#leadership =
      lease &&
      new Leadership(
        lease,
        features.flatMap((f) => f.leaderServices ?? []),
        onError('leadership'),
      );

    // One list, started in order and stopped in reverse (ServiceGroup). stop(), step by step:
    //  1. The 'work' group, its members' stops begun together and all awaited: the leader's
    //     services stop and the lease is given up at once, so another process leads while this
    //     one drains; meanwhile the worker stops claiming, lets its handlers finish (or aborts
    //     them at the deadline), writes their outcomes, then stops heartbeats (Worker); and
    //     the producer drops its pending trailing NOTIFYs (polling covers them).
    //  2. The reaper, not leader-only: it sweeps until this worker's leases are settled.
    //  3. The presence lock, after the lease was given up (Worker.presence says why).
    //  4. The features' services: the relay publishes what draining handlers recorded.
    //  5. The pool, in #stop.
    // The 'work' group stays last in the list: the claims' stop then runs synchronously inside
    // stop() (Worker says why).
    // start() runs it the other way: the features' services first (declared schedules are
    // written before any work, the relay is up before the first job), the lease last, once the
    // worker holds its presence lock: the lease records the lock's key, so this process's
    // death frees the lease at once.
    const work: Service[] = [service('producer', { stop: async () => this.#producer.stop() })];
    if (this.#worker) work.push(this.#worker.service);
    if (this.#leadership) work.push(this.#leadership);
    this.#services = new ServiceGroup('this Baton instance', [
      ...features.flatMap((f) => f.services ?? []),
      ...(this.#worker ? [this.#worker.presence] : []),
      ...(config.reaper ? [this.#reaper] : []),
      new ServiceGroup('work', work, { stop: 'together' }),
    ]);
  }

  migrate(): Promise<MigrateResult> {
    return this.#d.migrate();
  }

  async start(): Promise<void> {
    if (this.#started) return;
    if (this.#stopping) throw new BatonError('SHUTTING_DOWN', 'this Baton instance was stopped; create a new one');
    this.#started = true;
    try {
      await this.#services.start();
      this.#log.info({ queues: this.config.queues, dispatch: this.config.dispatch }, 'baton: started');
    } catch (err) {
      await this.stop({ drainMs: 0 }).catch(() => undefined);
      throw err;
    }
  }

  stop(opts: { drainMs?: number } = {}): Promise<void> {
    this.#stopped ??= this.#stop(opts.drainMs ?? this.config.drainMs);
    return this.#stopped;
  }

  async #stop(drainMs: number): Promise<void> {
    this.#stopping = true;
    this.#drainMs = drainMs;
    try {
      await this.#services.stop();
    } finally {
      // The pool (when the engine owns it) closes last, whatever else failed, and also after a stop without start().
      await this.#d.close();
    }
    this.#log.info({}, 'baton: stopped');
  }

  async enqueue(spec: JobSpec, opts: EnqueueOptions = {}): Promise<EnqueueResult> {
    const [result] = await this.#producer.enqueueMany([spec], opts);
    return result as EnqueueResult;
  }

  enqueueMany(specs: JobSpec[], opts: EnqueueOptions = {}): Promise<EnqueueResult[]> {
    return this.#producer.enqueueMany(specs, opts);
  }

  workflow<I, O>(name: string, fn: WorkflowFn<I, O>, opts?: WorkflowOptions): void;
  workflow<I>(name: string, opts?: WorkflowOptions): WorkflowBuilder<I>;
  workflow<I, O>(name: string, fnOrOpts?: WorkflowFn<I, O> | WorkflowOptions, opts?: WorkflowOptions): WorkflowBuilder<I> | undefined {
    if (typeof fnOrOpts === 'function') {
      this.workflows.define(name, fnOrOpts, opts);
      return undefined;
    }
    const { builder, fn } = workflowBuilder<I>();
    this.workflows.define(name, fn, fnOrOpts);
    return builder;
  }

  startWorkflow(name: string, input?: unknown, opts?: Parameters<Workflows['start']>[2]) {
    return this.workflows.start(name, input, opts);
  }

  sendEvent(runId: string, name: string, payload?: unknown, opts?: { idempotencyKey?: string }) {
    return this.workflows.sendEvent(runId, name, payload, opts);
  }

  async wake(queue: string): Promise<void> {
    this.#producer.wake([queue]);
  }

  /** Wakes `queues` here and, in notify mode, in other processes. */
  #wakeQueues(queues: string[]): void {
    this.#producer.wake(queues);
  }

  /** The leader group starts on taking the lease and stops on losing it; a new leader also reaps at once. */
  #leadershipChanged(leader: boolean): void {
    this.#log.info({ leader }, leader ? 'baton: elected leader (runs maintenance)' : 'baton: no longer the leader');
    this.events.emit('leadership', { leader });
    if (leader) this.#reaper.kick();
    this.#leadership?.changed(leader);
  }

  stats(): EngineStats {
    return {
      ...this.#counters,
      cron: { ...this.#cron.counters, misfires: { ...this.#cron.counters.misfires } },
      workflows: structuredClone(this.workflows.counters),
      slots: this.#worker?.slots() ?? {},
      presenceHeld: this.#worker?.presenceHeld ?? null,
      leader: this.#started ? (this.#lease?.isLeader() ?? false) : null,
    };
  }
}
