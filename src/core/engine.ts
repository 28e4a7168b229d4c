// The engine: composes dispatchers, the claimer, runner, completer, heartbeats,
// reaper, wake-ups and presence into a Baton. Owns the lifecycle (start / drain-stop);
// the claim protocol itself lives in claimer.ts.
//
// Terminology. A *job* is one row; a *queue* groups jobs for claiming; a *lease*
// is a worker's time-limited claim on a job, identified by its fencing *token*;
// an *attempt* is spent at claim time; a *worker* is one engine process holding
// a presence lock; a *dispatcher* is its claim loop for one queue; the *leader* is the one
// process holding the leader lease (leader-lease.ts), which runs cron, retention and pruning.

import type { Executor, NotificationListener, Presence } from '../driver/executor.ts';
import type { LeaderStore } from '../driver/leader-store.ts';
import type { MigrateResult } from '../driver/migrations.ts';
import type { OutboxStore } from '../driver/outbox-store.ts';
import type { ScheduleStore } from '../driver/schedule-store.ts';
import type { WorkflowStore } from '../driver/workflow-store.ts';
import { BatonError, JobCancelledError } from '../types/errors.ts';
import type { EnqueueResult, JobSpec } from '../types/job.ts';
import type { ScheduleInput } from '../types/schedule.ts';
import type { WorkflowFn, WorkflowOptions } from '../types/workflow.ts';
import { type AdminApi, createAdmin } from './admin.ts';
import type { Baton, EngineStats, EnqueueOptions } from './baton.ts';
import { Claimer } from './claimer.ts';
import { type Clock, systemClock } from './clock.ts';
import { Completer } from './completer.ts';
import type { EngineConfig } from './config.ts';
import { fairnessOf } from './config.ts';
import type { CronApi } from './cron/api.ts';
import { CronService } from './cron/service.ts';
import { QueueDispatcher } from './dispatcher.ts';
import { EngineEventEmitter } from './events.ts';
import { FlowState } from './flow.ts';
import type { HandlerMap } from './handler.ts';
import { Heartbeater } from './heartbeater.ts';
import type { RunnerDeps } from './job-runner.ts';
import { LeaderLease } from './leader-lease.ts';
import { type InFlight, LeaseTable } from './lease-table.ts';
import type { Logger } from './logger.ts';
import { cancelChannelFor, channelFor, cronChannelFor } from './notifier.ts';
import type { RelayConfig } from './outbox/config.ts';
import type { PublisherMap } from './outbox/publisher.ts';
import { Relay } from './outbox/relay.ts';
import { OutboxRetention } from './outbox/retention.ts';
import { OutboxService, outboxChannelFor } from './outbox/service.ts';
import { Producer } from './producer.ts';
import { Reaper } from './reaper.ts';
import { Retention } from './retention.ts';
import { noTracing, type Tracing } from './tracing.ts';
import { type WorkflowBuilder, workflowBuilder } from './workflow/builder.ts';
import { Workflows } from './workflow/service.ts';

/** After the drain deadline, aborted handlers get this long to settle before their leases are released. */
const ABORT_GRACE_MS = 1_000;

export interface EngineDeps {
  config: EngineConfig;
  executor: Executor;
  /** Runs admin reads and operator actions, apart from the claim path's connections. */
  adminExecutor: Executor;
  handlers: HandlerMap;
  logger: Logger;
  lockNamespace: number;
  migrate: () => Promise<MigrateResult>;
  /** Opens this many query connections ahead of use (never rejects). */
  warmPool: (connections: number) => Promise<void>;
  /** `onAcquired` runs each time the presence lock is (re-)acquired. */
  createPresence: (hooks: { onAcquired: () => void; jobTypes: string[] }) => Presence;
  /** The leader lease's row, on the engine's pool. */
  leaderStore: LeaderStore;
  createListener: (hooks: {
    /** `payload` is the notification's ('' for wake-ups). */
    onNotify: (channel: string, payload: string) => void;
    onConnected: () => void;
    onError: (err: unknown) => void;
  }) => NotificationListener;
  /** Releases resources the engine owns (e.g. a pool it created). Called once, at the end of stop(). */
  close: () => Promise<void>;
  /** The schedules table, on the engine's pool (the ticker) and on the admin pool (baton.cron). */
  scheduleStore: ScheduleStore;
  adminScheduleStore: ScheduleStore;
  /** Schedules declared in the options (reconciled at start()), and whether to delete undeclared ones. */
  schedules?: { declared: readonly ScheduleInput[]; pruneUndeclared: boolean };
  /** Local monotonic time (lease proofs, claim lateness). Default: the system's. */
  clock?: Clock;
  /** Trace context capture at enqueue and a span per attempt. Default: none. */
  tracing?: Tracing;
  /** Where workflow runs, steps and events live. */
  workflowStore: WorkflowStore;
  /** The outbox table (engine pool and admin pool), and the relay's publishers and settings. */
  outbox: {
    store: OutboxStore;
    adminStore: OutboxStore;
    config: RelayConfig;
    publishers: PublisherMap;
    /** Run a relay in this process (when there are publishers). */
    relay: boolean;
  };
}

export class Engine implements Baton {
  readonly config: EngineConfig;
  readonly admin: AdminApi;
  readonly cron: CronApi;
  readonly events: EngineEventEmitter;
  readonly workflows: Workflows;
  readonly outbox: OutboxService;
  readonly #relay: Relay | null;
  readonly #d: EngineDeps;
  /** The handlers the runner looks up: the given ones, plus one per defined workflow. */
  readonly #handlers: Record<string, HandlerMap[string]>;
  readonly #log: Logger;
  readonly #leases: LeaseTable;
  readonly #dispatchers = new Map<string, QueueDispatcher>();
  readonly #byChannel = new Map<string, QueueDispatcher>();
  readonly #producer: Producer;
  readonly #completer: Completer;
  readonly #heartbeater: Heartbeater;
  readonly #reaper: Reaper;
  readonly #retention: Retention;
  readonly #runner: RunnerDeps;
  readonly #claimer: Claimer;
  readonly #flow: FlowState;
  readonly #cron: CronService;
  readonly #cronChannel: string;
  readonly #cancelChannel: string;
  /** Null when this process may not lead (leader: false or reaper: false). */
  readonly #lease: LeaderLease | null;
  readonly #outboxRetention: OutboxRetention;
  #presence: Presence | null = null;
  #listener: NotificationListener | null = null;
  /** The presence and listener connections being opened by start() (never rejects). */
  #connecting: Promise<PromiseSettledResult<void>[]> | null = null;
  /** The pool connections start() opens meanwhile (never rejects). */
  #warming: Promise<void> | null = null;
  #poll: NodeJS.Timeout | null = null;
  #started = false;
  #stopping = false;
  #stopped: Promise<void> | null = null;
  #idle: Array<() => void> = [];
  readonly #counters = {
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
    this.config = deps.config;
    this.#log = deps.logger.child({ worker: deps.config.workerId });
    const clock = deps.clock ?? systemClock;
    const tracing = deps.tracing ?? noTracing;
    this.#leases = new LeaseTable(clock);
    this.events = new EngineEventEmitter((event, err) => this.#log.warn({ err, event }, 'baton: an event listener threw'));
    const onError = (where: string) => (error: unknown) => {
      this.#log.warn({ err: error, where }, 'baton: background operation failed');
      this.events.emit('error', { where, error });
    };
    this.admin = createAdmin(deps.adminExecutor, (q) => this.#wakeQueues([q]), {
      // A cancel of a job this very process holds aborts its handler now, NOTIFY or not.
      onCancelRequested: (job) => {
        const entry = this.#leases.get(job.id);
        if (entry && entry.token === job.token) this.#cancelRequested(entry, 'local');
      },
    });
    this.#lease =
      this.config.reaper && this.config.leader
        ? new LeaderLease({
            store: deps.leaderStore,
            holder: this.config.workerId,
            leaseMs: this.config.leaderLeaseMs,
            clock,
            lockNamespace: deps.lockNamespace,
            lockKey: () => this.#presence?.lockKey ?? null,
            onChange: (leader) => this.#leadershipChanged(leader),
            onError: onError('leader-lease'),
          })
        : null;
    const leaderEpoch = () => this.#lease?.epoch() ?? null;
    this.#handlers = { ...deps.handlers };
    this.workflows = new Workflows({
      store: deps.workflowStore,
      handlers: this.#handlers,
      wake: (q) => this.#wakeQueues([q]),
      enqueue: (spec) => this.enqueue(spec),
      channelOf: (q) => channelFor(this.config.schema, q),
    });
    this.events.on('deadLettered', (e) => this.workflows.jobDeadLettered(e.job));
    this.#producer = new Producer({
      config: this.config,
      executor: deps.executor,
      events: this.events,
      wakeLocal: (queues) => {
        for (const q of queues) this.#dispatchers.get(q)?.wake();
      },
      onNotifyError: onError('notify'),
      tracing,
    });
    this.#completer = new Completer({
      executor: deps.executor,
      config: this.config,
      onFenced: (kind, count) => this.#fenced(kind, count),
      onError: onError('completer'),
    });
    this.#heartbeater = new Heartbeater({
      executor: deps.executor,
      config: this.config,
      clock,
      leases: this.#leases,
      onLost: (entry, why) => this.#leaseLost(entry, why),
      onCancelRequested: (entry) => this.#cancelRequested(entry, 'heartbeat'),
      onError: onError('heartbeat'),
      afterTick: () => {
        this.#claimer.tick();
        return deps.executor.workerTouch({ id: this.config.workerId, inFlight: this.#leases.size });
      },
    });
    this.#reaper = new Reaper({
      executor: deps.executor,
      config: this.config,
      leaderEpoch,
      lockNamespace: deps.lockNamespace,
      onReaped: (jobs) => {
        this.#counters.reclaimed += jobs.length;
        const fast = jobs.some((j) => !j.expired);
        this.events.emit('reaped', { count: jobs.length, fast });
        this.#log.info({ count: jobs.length, fast }, 'baton: reclaimed leases');
        this.#wakeQueues(jobs.filter((j) => j.state === 'pending').map((j) => j.queue));
      },
      onError: onError('reaper'),
    });
    this.#retention = new Retention({
      executor: deps.executor,
      config: this.config,
      leaderEpoch,
      onPurged: (state, byQueue) => {
        for (const { queue, n } of byQueue) this.events.emit('purged', { state, queue, count: n });
      },
      onError: onError('retention'),
    });
    this.#cronChannel = cronChannelFor(this.config.schema);
    this.#cancelChannel = cancelChannelFor(this.config.schema);
    this.#cron = new CronService({
      store: deps.scheduleStore,
      adminStore: deps.adminScheduleStore,
      misfireThresholdMs: this.config.cronMisfireThresholdMs,
      maxAttemptsDefault: this.config.maxAttemptsDefault,
      // Without LISTEN (poll mode, or no queues: no listener) a change elsewhere is seen at the
      // next poll; with it, a lost NOTIFY within a minute.
      maxSleepMs: this.config.dispatch === 'notify' && Object.keys(this.config.queues).length > 0 ? 60_000 : this.config.pollIntervalMs,
      // In the ticker's fenced transaction; it wakes the queues itself once that has committed.
      enqueue: (specs, client) => this.#producer.enqueueMany(specs, { client, notify: false }),
      wake: (queues) => this.#wakeQueues(queues),
      leaderEpoch,
      fenced: (epoch, fn) => {
        const lease = this.#lease;
        if (!lease) return Promise.resolve({ held: false as const });
        // Idle past the local deadline means paused: the server ends it before the lease can expire.
        return deps.leaderStore.fenced({ epoch, idleMs: lease.fenceMs, stillLeader: () => lease.epoch() === epoch }, fn);
      },
      log: this.#log,
      onError: onError('cron'),
      declared: deps.schedules?.declared ?? [],
      pruneUndeclared: deps.schedules?.pruneUndeclared ?? false,
    });
    this.cron = this.#cron.api;
    this.#relay = this.#createRelay();
    this.outbox = new OutboxService({
      store: deps.outbox.store,
      adminStore: deps.outbox.adminStore,
      schema: this.config.schema,
      maxAttemptsDefault: deps.outbox.config.maxAttemptsDefault,
      relay: this.#relay,
    });
    this.#outboxRetention = new OutboxRetention({
      store: deps.outbox.store,
      config: deps.outbox.config,
      leaderEpoch,
      onPurged: (state, count) => this.outbox.events.emit('purged', { state, count }),
      onError: onError('outbox-retention'),
    });
    this.#runner = {
      tracing,
      handlers: this.#handlers,
      completer: this.#completer,
      config: this.config,
      logger: this.#log,
      events: this.events,
      counters: this.#counters,
      onSelfFenced: (e) => this.#leaseLost(e, 'deadline'),
      onFinished: (e) => {
        this.#leases.delete(e);
        if (this.#leases.size === 0) for (const f of this.#idle.splice(0)) f();
      },
    };
    this.#flow = new FlowState(
      deps.executor,
      Object.fromEntries(Object.keys(this.config.queues).map((q) => [q, fairnessOf(this.config, q)])),
      (queues) => {
        for (const q of queues) this.#dispatchers.get(q)?.wake();
      },
    );
    this.#claimer = new Claimer({
      executor: deps.executor,
      config: this.config,
      clock,
      leases: this.#leases,
      flow: this.#flow,
      runner: this.#runner,
      events: this.events,
      log: this.#log,
      counters: this.#counters,
      onReclaimed: (stale) => this.#leaseLost(stale, 'reclaimed'),
      onFenced: (kind, count) => this.#fenced(kind, count),
      wakeQueues: (queues) => this.#wakeQueues(queues),
      onError: onError('stranded-leases'),
    });
    for (const [queue, concurrency] of Object.entries(this.config.queues)) {
      const dispatcher: QueueDispatcher = new QueueDispatcher({
        queue,
        concurrency,
        claimAndStart: (limit) => this.#claimer.claimAndStart(dispatcher, limit),
        onError: onError(`claim:${queue}`),
      });
      this.#dispatchers.set(queue, dispatcher);
      this.#byChannel.set(channelFor(this.config.schema, queue), dispatcher);
    }
  }

  migrate(): Promise<MigrateResult> {
    return this.#d.migrate();
  }

  /** A relay for the configured publishers, woken by its own LISTEN connection in notify mode. */
  #createRelay(): Relay | null {
    const { outbox } = this.#d;
    if (!outbox.relay || Object.keys(outbox.publishers).length === 0) return null;
    const channel = outboxChannelFor(this.config.schema);
    const relay: Relay = new Relay({
      store: outbox.store,
      publishers: outbox.publishers,
      config: outbox.config,
      logger: this.#log,
      listen:
        this.config.dispatch === 'notify'
          ? (onNotify) => {
              const l = this.#d.createListener({
                onNotify,
                // Notifications sent while it was away are gone: claim at once.
                onConnected: onNotify,
                onError: (err) => this.events.emit('error', { where: 'outbox-listener', error: err }),
              });
              return { start: () => l.start([channel]), stop: () => l.stop() };
            }
          : null,
    });
    relay.events.on('error', (e) => this.events.emit('error', e));
    return relay;
  }

  async start(): Promise<void> {
    if (this.#started) return;
    if (this.#stopping) throw new BatonError('SHUTTING_DOWN', 'this Baton instance was stopped; create a new one');
    this.#started = true;
    const working = this.#dispatchers.size > 0;
    try {
      await this.#cron.reconcile();
      this.#throwIfStopping();
      if (working) {
        // Claims wait while the lock is lost (see Claimer); getting it back wakes them.
        this.#presence = this.#d.createPresence({
          jobTypes: Object.keys(this.#handlers),
          onAcquired: () => {
            this.#claimer.presenceAcquired();
            this.#wakeAll();
          },
        });
        this.#claimer.presence = this.#presence;
        if (this.config.dispatch === 'notify') {
          this.#listener = this.#d.createListener({
            onNotify: (channel, payload) => {
              if (channel === this.#cronChannel) this.#cron.wake();
              else if (channel === this.#cancelChannel) this.#cancelNotified(payload);
              else this.#byChannel.get(channel)?.wake();
            },
            // Notifications sent while the listener was away are gone: poll at once.
            onConnected: () => {
              this.#wakeAll();
              this.#cron.wake();
            },
            onError: (err) => this.events.emit('error', { where: 'listener', error: err }),
          });
        }
        // The claim loops start now. With a generated worker id the first claims go out while the
        // presence and LISTEN connections open (Claimer.claimsBeforePresence), so a worker that starts with a backlog
        // waits for one connect rather than for the slowest of several. Their connections open
        // on first use; the pool opens one more for the first outcome write meanwhile, which
        // would otherwise stall that write by a connect and the next claim behind it. With a
        // configured id the claims wait for the lock, and the pool opens one connection per
        // queue plus one for them. A stop() meanwhile waits for all of it to settle.
        this.#heartbeater.start();
        for (const d of this.#dispatchers.values()) d.start();
        void this.#flow.refresh();
        this.#warming = this.#d.warmPool(this.#claimer.claimsBeforePresence ? 1 : this.#dispatchers.size + 1);
        this.#connecting = Promise.allSettled([
          this.#presence.start(),
          this.#listener?.start([...this.#byChannel.keys(), this.#cronChannel, this.#cancelChannel]),
        ]);
        for (const r of await this.#connecting) if (r.status === 'rejected') throw r.reason;
        this.#throwIfStopping();
        // Each poll also re-reads which queues are flow-controlled (caps, rate limits, keyed jobs).
        this.#poll = setInterval(() => void this.#flow.refresh().then(() => this.#wakeAll()), this.config.pollIntervalMs);
      }
      if (this.config.reaper) {
        this.#reaper.start();
        this.#retention.start();
      }
      if (this.#lease) {
        // After the presence lock (a working process): the lease records its key, so that
        // this process's death frees the lease at once.
        this.#lease.start();
        this.#outboxRetention.start();
        this.#cron.start();
      }
      if (this.#relay) {
        await this.#relay.start();
        this.#throwIfStopping();
      }
      this.#log.info({ queues: this.config.queues, dispatch: this.config.dispatch }, 'baton: started');
    } catch (err) {
      await this.stop({ drainMs: 0 }).catch(() => undefined);
      throw err;
    }
  }

  /** stop() may run while start() awaits a connection: start nothing more after that. */
  #throwIfStopping(): void {
    if (this.#stopping) throw new BatonError('SHUTTING_DOWN', 'stop() was called while this Baton instance was starting');
  }

  stop(opts: { drainMs?: number } = {}): Promise<void> {
    this.#stopped ??= this.#stop(opts.drainMs ?? this.config.drainMs);
    return this.#stopped;
  }

  async #stop(drainMs: number): Promise<void> {
    this.#stopping = true;
    // The leader's work stops first (the ticker finishes the tick it is in; its writes are safe
    // to cut anywhere), then the lease is given up: another process leads while this one drains.
    const leadershipStopped = (async () => {
      await this.#cron.stop();
      await this.#retention.stop();
      await this.#outboxRetention.stop();
      await this.#lease?.stop();
    })();
    this.#claimer.stop();
    if (this.#poll) clearInterval(this.#poll);
    for (const d of this.#dispatchers.values()) d.stop();
    this.#producer.stop();
    // A connection still being opened cannot be closed cleanly: let it finish (or fail) first.
    await this.#connecting;
    await this.#warming;
    await this.#listener?.stop();
    // Claims in flight finish; what they return is released unstarted (see Claimer).
    await Promise.all([...this.#dispatchers.values()].map((d) => d.idle()));
    if (!(await this.#waitIdle(drainMs))) {
      // Handlers still running are aborted. Whatever they throw now is our doing, not the job's:
      // the runner gives those jobs back with the attempt refunded (a job that finishes anyway
      // is recorded as it finished). A job that crashes the process never gets here: its
      // attempt stays spent, so a poison job still dead-letters.
      const reason = new BatonError('SHUTTING_DOWN', `drain deadline of ${drainMs} ms passed`);
      for (const e of this.#leases.live()) {
        e.drainAborted = true;
        e.abort(reason);
      }
      if (!(await this.#waitIdle(ABORT_GRACE_MS))) {
        // Handlers that ignore their signal: give their leases back now rather than at expiry,
        // refunded likewise (the outcome they may still reach is discarded).
        const stuck = this.#leases.live();
        for (const e of stuck) this.#leases.markLost(e, reason);
        await this.#claimer.releaseStuck(stuck).catch((err: unknown) => this.#log.warn({ err }, 'baton: releasing stuck leases failed'));
      }
    }
    await this.#completer.drain();
    await this.#heartbeater.stop();
    await this.#claimer.idle();
    await leadershipStopped;
    await this.#reaper.stop();
    await this.#presence?.stop();
    await this.#relay?.stop();
    await this.#d.close();
    this.#log.info({}, 'baton: stopped');
  }

  async #waitIdle(ms: number): Promise<boolean> {
    if (this.#leases.size === 0) return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.#leases.size === 0), ms);
      this.#idle.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
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

  #wakeAll(): void {
    for (const d of this.#dispatchers.values()) d.wake();
  }

  /**
   * A cancel was requested for a job this process holds: its handler's signal is aborted with a
   * JobCancelledError (once). The lease stays held and heartbeated: the handler's outcome, fenced
   * as ever, decides how the job ends (cancelled when it fails, its outcome when it returns).
   */
  #cancelRequested(entry: InFlight, via: 'notify' | 'heartbeat' | 'local'): void {
    if (entry.lost || entry.cancelRequested) return;
    entry.cancelRequested = true;
    entry.abort(new JobCancelledError(entry.job.id));
    this.#counters.cancelSignalled++;
    this.#log.info({ jobId: entry.job.id, token: entry.token, via }, 'baton: cancel requested; handler signal aborted');
    this.events.emit('cancelSignalled', { job: entry.job, via });
  }

  /** A NOTIFY on the cancel channel: `<job id>:<token>`, acted on only by the holder of that lease. */
  #cancelNotified(payload: string): void {
    const [id, token] = payload.split(':');
    const entry = id === undefined ? undefined : this.#leases.get(id);
    if (entry && entry.token === token) this.#cancelRequested(entry, 'notify');
  }

  #leaseLost(entry: InFlight, why: 'fenced' | 'deadline' | 'reclaimed'): void {
    if (!this.#leases.markLost(entry)) return;
    this.#counters.leasesLost++;
    if (why === 'fenced') this.#fenced('heartbeat', 1);
    this.#log.warn({ jobId: entry.job.id, token: entry.token, why }, 'baton: lease lost; handler aborted, nothing will be written');
    this.events.emit('leaseLost', { job: entry.job });
  }

  #leadershipChanged(leader: boolean): void {
    this.#log.info({ leader }, leader ? 'baton: elected leader (runs maintenance)' : 'baton: no longer the leader');
    this.events.emit('leadership', { leader });
    if (leader) {
      this.#reaper.kick();
      this.#retention.kick();
    }
    this.#cron.wake();
  }

  #fenced(kind: 'complete' | 'fail' | 'heartbeat' | 'start' | 'release', count: number): void {
    this.#counters.fencedWrites += count;
    this.events.emit('fenced', { kind, count });
  }

  stats(): EngineStats {
    const slots: EngineStats['slots'] = {};
    for (const d of this.#dispatchers.values()) slots[d.queue] = { concurrency: d.concurrency, inFlight: d.inFlight };
    return {
      ...this.#counters,
      cron: { ...this.#cron.counters, misfires: { ...this.#cron.counters.misfires } },
      workflows: structuredClone(this.workflows.counters),
      slots,
      presenceHeld: this.#presence ? this.#presence.held : null,
      leader: this.#started ? (this.#lease?.isLeader() ?? false) : null,
    };
  }
}
