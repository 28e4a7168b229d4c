// The worker: one claim loop per configured queue, with the parts that keep its leases (the
// presence lock, heartbeats, the completer, the LISTEN connection, the flow-control poll), as
// services started in order and stopped in reverse. Its stop drains: no new claims, handlers
// finish (or are aborted at the deadline), their outcomes are written, then heartbeats stop.

import type { Executor, NotificationListener, Presence } from '../driver/executor.ts';
import { BatonError, JobCancelledError } from '../types/errors.ts';
import type { JobProgress, LeasedJob } from '../types/job.ts';
import type { EngineStats } from './baton.ts';
import { Claimer } from './claimer.ts';
import type { Clock } from './clock.ts';
import { Completer } from './completer.ts';
import { type EngineConfig, fairnessOf } from './config.ts';
import { QueueDispatcher } from './dispatcher.ts';
import type { EngineDeps } from './engine-context.ts';
import type { EngineEventEmitter } from './events.ts';
import { FlowState } from './flow-control.ts';
import type { HandlerMap } from './handler.ts';
import { Heartbeater } from './heartbeater.ts';
import type { RunnerDeps } from './job-runner.ts';
import { type InFlight, LeaseTable } from './lease-table.ts';
import type { Logger } from './logger.ts';
import { cancelChannelFor, channelFor } from './notifier.ts';
import { type Service, ServiceGroup, service } from './service.ts';
import type { Tracing } from './tracing.ts';

/** After the drain deadline, aborted handlers get this long to settle before their leases are released. */
const ABORT_GRACE_MS = 1_000;

/** The engine's monotonic counters (shared by the worker's parts and the reaper). */
export type EngineCounters = Omit<EngineStats, 'cron' | 'workflows' | 'slots' | 'presenceHeld' | 'leader'>;

export interface WorkerDeps extends Pick<EngineDeps, 'createPresence' | 'createListener' | 'warmPool'> {
  config: EngineConfig;
  executor: Executor;
  clock: Clock;
  tracing: Tracing;
  /** The runner's handlers (the engine adds one per workflow defined before start()). */
  handlers: HandlerMap;
  log: Logger;
  events: EngineEventEmitter;
  counters: EngineCounters;
  /** NOTIFY channels of other features on the worker's LISTEN connection, and their handlers. */
  routes: ReadonlyMap<string, (payload: string) => void>;
  /** The LISTEN connection (re)connected: notifications sent meanwhile are gone. */
  onListenerConnected: () => void;
  /** Wakes queues here and, in notify mode, in other processes. */
  wakeQueues: (queues: string[]) => void;
  onError: (where: string) => (err: unknown) => void;
  /** The drain deadline of the stop() in progress. */
  drainMs: () => number;
}

export class Worker {
  readonly #d: WorkerDeps;
  readonly #leases: LeaseTable;
  readonly #dispatchers = new Map<string, QueueDispatcher>();
  readonly #byChannel = new Map<string, QueueDispatcher>();
  readonly #completer: Completer;
  readonly #heartbeater: Heartbeater;
  readonly #claimer: Claimer;
  readonly #flow: FlowState;
  readonly #cancelChannel: string;
  #presence: Presence | null = null;
  #listener: NotificationListener | null = null;
  /** The presence and listener connections being opened by start() (never rejects). */
  #connecting: Promise<PromiseSettledResult<void>[]> | null = null;
  /** The pool connections start() opens meanwhile (never rejects). */
  #warming: Promise<void> | null = null;
  #poll: NodeJS.Timeout | null = null;
  /** The claim loops were stopped (a stop() may come while start() awaits its connections). */
  #stopped = false;
  #idle: Array<() => void> = [];
  /**
   * The worker's services, in start order. The engine stops them in reverse and closes the
   * presence lock later, on its own (see `presence`).
   */
  readonly service: Service;
  /**
   * Closes the presence connection. Apart from `service`, so the engine closes it after the
   * leader lease is given up and the reaper stopped: the lease records the lock's key, and a
   * lock let go first would let another process take the lease before this one gave it up.
   */
  readonly presence: Service = service('presence', { stop: async () => this.#presence?.stop() });

  constructor(deps: WorkerDeps) {
    this.#d = deps;
    const { config, executor, clock, events, counters, onError } = deps;
    this.#leases = new LeaseTable(clock, (entry, via) => this.#cancelRequested(entry, via));
    this.#cancelChannel = cancelChannelFor(config.schema);
    this.#completer = new Completer({
      executor,
      config,
      onFenced: (kind, count) => this.#fenced(kind, count),
      onError: onError('completer'),
    });
    this.#heartbeater = new Heartbeater({
      executor,
      config,
      clock,
      leases: this.#leases,
      onLost: (entry, why) => this.#leaseLost(entry, why),
      onCancelRequested: (entry) => this.#cancelRequested(entry, 'heartbeat'),
      onProgress: (entry, value) => {
        if (events.listenerCount('progress') > 0) events.emit('progress', { job: entry.job, progress: value as JobProgress });
      },
      onProgressFenced: (count) => this.#fenced('progress', count),
      onError: onError('heartbeat'),
      afterTick: () => {
        this.#claimer.tick();
        return executor.workerTouch({ id: config.workerId, inFlight: this.#leases.size });
      },
    });
    const runner: RunnerDeps = {
      tracing: deps.tracing,
      handlers: deps.handlers,
      completer: this.#completer,
      config,
      logger: deps.log,
      events,
      counters,
      onSelfFenced: (e) => this.#leaseLost(e, 'deadline'),
      onFinished: (e) => {
        this.#leases.delete(e);
        if (this.#leases.size === 0) for (const f of this.#idle.splice(0)) f();
      },
    };
    this.#flow = new FlowState(executor, Object.fromEntries(Object.keys(config.queues).map((q) => [q, fairnessOf(config, q)])), (queues) =>
      this.wakeLocal(queues),
    );
    this.#claimer = new Claimer({
      executor,
      config,
      clock,
      leases: this.#leases,
      flow: this.#flow,
      runner,
      events,
      log: deps.log,
      counters,
      onReclaimed: (stale) => this.#leaseLost(stale, 'reclaimed'),
      onFenced: (kind, count) => this.#fenced(kind, count),
      wakeQueues: deps.wakeQueues,
      onError: onError('stranded-leases'),
    });
    for (const [queue, concurrency] of Object.entries(config.queues)) {
      const dispatcher: QueueDispatcher = new QueueDispatcher({
        queue,
        concurrency,
        claimAndStart: (limit) => this.#claimer.claimAndStart(dispatcher, limit),
        onError: onError(`claim:${queue}`),
      });
      this.#dispatchers.set(queue, dispatcher);
      this.#byChannel.set(channelFor(config.schema, queue), dispatcher);
    }
    // Started in order, stopped in reverse, each stop awaited before the next. The claim loops
    // stop first: nothing new is claimed while the rest drains (claims in flight give their
    // jobs back unstarted). They stay last in this list, so that their stop runs synchronously
    // inside the engine's stop(): one called from a 'claimed' listener must have those very
    // jobs given back (a member stopped before them would defer it by a tick). The handlers
    // running then finish (or are aborted), and only then is the completer drained (their
    // outcomes are its last writes) and are heartbeats stopped (those leases stay proven until
    // written). The lost-reply sweeps go last: heartbeat ticks start them.
    this.service = new ServiceGroup('worker', [
      service('stranded-leases', { stop: () => this.#claimer.idle() }),
      this.#heartbeater,
      service('completer', { stop: () => this.#completer.drain() }),
      service('in-flight', { stop: () => this.#drain(deps.drainMs()) }),
      service('claim-loops', { start: () => this.#startClaims(), stop: () => this.#stopClaims() }),
    ]);
  }

  /** Whether this worker holds its presence lock; null before start(). */
  get presenceHeld(): boolean | null {
    return this.#presence ? this.#presence.held : null;
  }

  /** The presence lock's key while held (the leader lease records it). */
  get lockKey(): number | null {
    return this.#presence?.lockKey ?? null;
  }

  slots(): EngineStats['slots'] {
    const slots: EngineStats['slots'] = {};
    for (const d of this.#dispatchers.values()) slots[d.queue] = { concurrency: d.concurrency, inFlight: d.inFlight };
    return slots;
  }

  /** Wakes this process's claim loops of `queues`. */
  wakeLocal(queues: Iterable<string>): void {
    for (const q of queues) this.#dispatchers.get(q)?.wake();
  }

  /** A cancel of a job this very process holds aborts its handler now, NOTIFY or not. */
  cancelLocal(job: Pick<LeasedJob, 'id' | 'token'>): void {
    this.#leases.requestCancel(job.id, job.token, 'local');
  }

  async #startClaims(): Promise<void> {
    const { config, handlers } = this.#d;
    // Claims wait while the lock is lost (see Claimer); getting it back wakes them.
    this.#presence = this.#d.createPresence({
      jobTypes: Object.keys(handlers),
      onAcquired: () => {
        this.#claimer.presenceAcquired();
        this.#wakeAll();
      },
    });
    this.#claimer.presence = this.#presence;
    if (config.dispatch === 'notify') {
      this.#listener = this.#d.createListener({
        onNotify: (channel, payload) => {
          if (channel === this.#cancelChannel) this.#cancelNotified(payload);
          else {
            const route = this.#d.routes.get(channel);
            if (route) route(payload);
            else this.#byChannel.get(channel)?.wake();
          }
        },
        // Notifications sent while the listener was away are gone: poll at once.
        onConnected: () => {
          this.#wakeAll();
          this.#d.onListenerConnected();
        },
        onError: (err) => this.#d.events.emit('error', { where: 'listener', error: err }),
      });
    }
    // The claim loops start now. With a generated worker id the first claims go out while the
    // presence and LISTEN connections open (Claimer.claimsBeforePresence), so a worker that starts with a backlog
    // waits for one connect rather than for the slowest of several. Their connections open
    // on first use; the pool opens one more for the first outcome write meanwhile, which
    // would otherwise stall that write by a connect and the next claim behind it. With a
    // configured id the claims wait for the lock, and the pool opens one connection per
    // queue plus one for them. A stop() meanwhile waits for all of it to settle.
    for (const d of this.#dispatchers.values()) d.start();
    void this.#flow.refresh();
    this.#warming = this.#d.warmPool(this.#claimer.claimsBeforePresence ? 1 : this.#dispatchers.size + 1);
    this.#connecting = Promise.allSettled([
      this.#presence.start(),
      this.#listener?.start([...this.#byChannel.keys(), ...this.#d.routes.keys(), this.#cancelChannel]),
    ]);
    for (const r of await this.#connecting) if (r.status === 'rejected') throw r.reason;
    // A stop() meanwhile: the group refuses to go on (ServiceGroup.start), so no poll timer is left behind.
    if (this.#stopped) return;
    // Each poll also re-reads which queues are flow-controlled (caps, rate limits, keyed jobs).
    this.#poll = setInterval(() => void this.#flow.refresh().then(() => this.#wakeAll()), config.pollIntervalMs);
  }

  async #stopClaims(): Promise<void> {
    this.#stopped = true;
    this.#claimer.stop();
    if (this.#poll) clearInterval(this.#poll);
    for (const d of this.#dispatchers.values()) d.stop();
    // A connection still being opened cannot be closed cleanly: let it finish (or fail) first.
    await this.#connecting;
    await this.#warming;
    await this.#listener?.stop();
    // Claims in flight finish; what they return is released unstarted (see Claimer).
    await Promise.all([...this.#dispatchers.values()].map((d) => d.idle()));
  }

  async #drain(drainMs: number): Promise<void> {
    if (await this.#waitIdle(drainMs)) return;
    // Handlers still running are aborted. Whatever they throw now is our doing, not the job's:
    // the runner gives those jobs back with the attempt refunded (a job that finishes anyway
    // is recorded as it finished). A job that crashes the process never gets here: its
    // attempt stays spent, so a poison job still dead-letters.
    const reason = new BatonError('SHUTTING_DOWN', `drain deadline of ${drainMs} ms passed`);
    for (const e of this.#leases.live()) {
      e.drainAborted = true;
      e.abort(reason);
    }
    if (await this.#waitIdle(ABORT_GRACE_MS)) return;
    // Handlers that ignore their signal: give their leases back now rather than at expiry,
    // refunded likewise (the outcome they may still reach is discarded).
    const stuck = this.#leases.live();
    for (const e of stuck) this.#leases.markLost(e, reason);
    await this.#claimer.releaseStuck(stuck).catch((err: unknown) => this.#d.log.warn({ err }, 'baton: releasing stuck leases failed'));
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
    this.#d.counters.cancelSignalled++;
    this.#d.log.info({ jobId: entry.job.id, token: entry.token, via }, 'baton: cancel requested; handler signal aborted');
    this.#d.events.emit('cancelSignalled', { job: entry.job, via });
  }

  /** A NOTIFY on the cancel channel: `<job id>:<token>`, acted on only by the holder of that lease. */
  #cancelNotified(payload: string): void {
    const [id, token] = payload.split(':');
    if (id !== undefined && token !== undefined) this.#leases.requestCancel(id, token, 'notify');
  }

  #leaseLost(entry: InFlight, why: 'fenced' | 'deadline' | 'reclaimed'): void {
    if (!this.#leases.markLost(entry)) return;
    this.#d.counters.leasesLost++;
    if (why === 'fenced') this.#fenced('heartbeat', 1);
    this.#d.log.warn({ jobId: entry.job.id, token: entry.token, why }, 'baton: lease lost; handler aborted, nothing will be written');
    this.#d.events.emit('leaseLost', { job: entry.job });
  }

  #fenced(kind: 'complete' | 'fail' | 'heartbeat' | 'start' | 'release' | 'progress', count: number): void {
    this.#d.counters.fencedWrites += count;
    this.#d.events.emit('fenced', { kind, count });
  }
}
