// The engine: composes dispatchers, runner, completer, heartbeats, reaper,
// wake-ups and presence into a Baton. Owns the lifecycle (start / drain-stop).
//
// Terminology. A *job* is one row; a *queue* groups jobs for claiming; a *lease*
// is a worker's time-limited claim on a job, identified by its fencing *token*;
// an *attempt* is spent at claim time; a *worker* is one engine process holding
// a presence lock; a *dispatcher* is its claim loop for one queue.

import type { Executor, NotificationListener, Presence } from '../db/executor.ts';
import type { MigrateResult } from '../db/migrate.ts';
import { createAdmin } from './admin.ts';
import type { AdminApi, Baton, EngineStats, EnqueueOptions } from './baton.ts';
import { Completer } from './completer.ts';
import type { EngineConfig } from './config.ts';
import { QueueDispatcher } from './dispatcher.ts';
import { BatonError } from './errors.ts';
import { EngineEventEmitter } from './events.ts';
import type { HandlerMap } from './handler.ts';
import { Heartbeater } from './heartbeater.ts';
import type { EnqueueResult, JobSpec, LeasedJob } from './job.ts';
import { normalizeSpec } from './job-spec.ts';
import { LeaseTable, monotonicMs, type InFlight } from './lease-table.ts';
import type { Logger } from './logger.ts';
import { Notifier, channelFor } from './notifier.ts';
import { Reaper } from './reaper.ts';
import { runJob, type RunnerDeps } from './job-runner.ts';
import { StrandedLeases } from './stranded-leases.ts';

export const ENQUEUE_BATCH_MAX = 10_000;
/** Above every token (a bigint sequence's maximum is 2^63 - 1). */
const INT8_LIMIT = 2n ** 63n;
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
  createPresence: (hooks: { onAcquired: () => void }) => Presence;
  createListener: (hooks: { onNotify: (channel: string) => void; onConnected: () => void; onError: (err: unknown) => void }) => NotificationListener;
  /** Releases resources the engine owns (e.g. a pool it created). Called once, at the end of stop(). */
  close: () => Promise<void>;
}

export class Engine implements Baton {
  readonly config: EngineConfig;
  readonly admin: AdminApi;
  readonly events: EngineEventEmitter;
  readonly #d: EngineDeps;
  readonly #log: Logger;
  readonly #leases = new LeaseTable();
  readonly #dispatchers = new Map<string, QueueDispatcher>();
  readonly #byChannel = new Map<string, QueueDispatcher>();
  readonly #notifier: Notifier;
  readonly #onNotifyError: (err: unknown) => void;
  readonly #completer: Completer;
  readonly #heartbeater: Heartbeater;
  readonly #reaper: Reaper;
  readonly #runner: RunnerDeps;
  readonly #stranded: StrandedLeases;
  /** Claims in flight, each settled once its jobs are in the lease table or given back. */
  readonly #claims = new Set<Promise<number>>();
  /** See StrandedLeasesDeps.tokenFloor; read before the first claim when the worker id is configured. */
  #tokenFloor: bigint | null;
  #presence: Presence | null = null;
  /** The presence lock has been held at least once. */
  #presenceAcquired = false;
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
  readonly #counters = { claimed: 0, succeeded: 0, retried: 0, deadLettered: 0, fencedWrites: 0, leasesLost: 0, reclaimed: 0, strandedReleased: 0 };

  constructor(deps: EngineDeps) {
    this.#d = deps;
    this.config = deps.config;
    this.#log = deps.logger.child({ worker: deps.config.workerId });
    this.events = new EngineEventEmitter((event, err) => this.#log.warn({ err, event }, 'baton: an event listener threw'));
    const onError = (where: string) => (error: unknown) => {
      this.#log.warn({ err: error, where }, 'baton: background operation failed');
      this.events.emit('error', { where, error });
    };
    this.admin = createAdmin(deps.adminExecutor, (q) => this.#wakeQueues([q]));
    this.#onNotifyError = onError('notify');
    this.#notifier = new Notifier({
      debounceMs: this.config.notifyDebounceMs,
      channelOf: (q) => channelFor(this.config.schema, q),
      send: (channels) => deps.executor.jobNotify({ channels }),
      onError: this.#onNotifyError,
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
      leases: this.#leases,
      onLost: (entry, why) => this.#leaseLost(entry, why),
      onError: onError('heartbeat'),
      afterTick: () => {
        this.#stranded.tick();
        return deps.executor.workerTouch({ id: this.config.workerId, inFlight: this.#leases.size });
      },
    });
    // A generated id is this process's alone: every lease it owns came from its own claims.
    this.#tokenFloor = this.config.workerIdGenerated ? 0n : null;
    this.#stranded = new StrandedLeases({
      executor: deps.executor,
      owner: this.config.workerId,
      leases: this.#leases,
      windowMs: this.config.leaseMs,
      claimsInFlight: () => this.#claims,
      // Before the floor is known no claim of ours has taken a token: nothing owned is ours.
      tokenFloor: () => this.#tokenFloor ?? INT8_LIMIT,
      onReleased: (jobs) => {
        this.#counters.strandedReleased += jobs.length;
        this.#log.warn({ count: jobs.length, jobIds: jobs.slice(0, 20).map((j) => j.id) }, 'baton: released leases whose claim reply was lost (attempt refunded)');
        this.#emitReleased(jobs, 'stranded');
        this.#wakeQueues([...new Set(jobs.map((j) => j.queue))]);
      },
      onError: onError('stranded-leases'),
    });
    this.#reaper = new Reaper({
      executor: deps.executor,
      config: this.config,
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
    this.#runner = {
      handlers: deps.handlers,
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
    for (const [queue, concurrency] of Object.entries(this.config.queues)) {
      const dispatcher: QueueDispatcher = new QueueDispatcher({
        queue,
        concurrency,
        claimAndStart: (limit) => this.#claimAndStart(dispatcher, limit),
        onError: onError(`claim:${queue}`),
      });
      this.#dispatchers.set(queue, dispatcher);
      this.#byChannel.set(channelFor(this.config.schema, queue), dispatcher);
    }
  }

  migrate(): Promise<MigrateResult> {
    return this.#d.migrate();
  }

  async start(): Promise<void> {
    if (this.#started) return;
    if (this.#stopping) throw new BatonError('SHUTTING_DOWN', 'this Baton instance was stopped; create a new one');
    this.#started = true;
    const working = this.#dispatchers.size > 0;
    try {
      if (working) {
        // Claims wait while the lock is lost (see #mayClaim); getting it back wakes them.
        this.#presence = this.#d.createPresence({
          onAcquired: () => {
            this.#presenceAcquired = true;
            this.#wakeAll();
          },
        });
        if (this.config.dispatch === 'notify') {
          this.#listener = this.#d.createListener({
            onNotify: (channel) => this.#byChannel.get(channel)?.wake(),
            // Notifications sent while the listener was away are gone: poll at once.
            onConnected: () => this.#wakeAll(),
            onError: (err) => this.events.emit('error', { where: 'listener', error: err }),
          });
        }
        // The claim loops start now. With a generated worker id the first claims go out while the
        // presence and LISTEN connections open (#mayClaim), so a worker that starts with a backlog
        // waits for one connect rather than for the slowest of several. Their connections open
        // on first use; the pool opens one more for the first outcome write meanwhile, which
        // would otherwise stall that write by a connect and the next claim behind it. With a
        // configured id the claims wait for the lock, and the pool opens one connection per
        // queue plus one for them. A stop() meanwhile waits for all of it to settle.
        this.#heartbeater.start();
        for (const d of this.#dispatchers.values()) d.start();
        this.#warming = this.#d.warmPool(this.#claimsBeforePresence ? 1 : this.#dispatchers.size + 1);
        this.#connecting = Promise.allSettled([this.#presence.start(), this.#listener?.start([...this.#byChannel.keys()])]);
        for (const r of await this.#connecting) if (r.status === 'rejected') throw r.reason;
        this.#throwIfStopping();
        this.#poll = setInterval(() => this.#wakeAll(), this.config.pollIntervalMs);
      }
      if (this.config.reaper) this.#reaper.start();
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
    if (this.#poll) clearInterval(this.#poll);
    for (const d of this.#dispatchers.values()) d.stop();
    this.#notifier.stop();
    // A connection still being opened cannot be closed cleanly: let it finish (or fail) first.
    await this.#connecting;
    await this.#warming;
    await this.#listener?.stop();
    // Claims in flight finish; what they return is released unstarted (see #claimAndStart).
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
        try {
          const ok = await this.#d.executor.jobReleaseMany({ leases: stuck.map((e) => ({ id: e.job.id, token: e.token })), refundAttempt: true });
          this.#emitReleased(stuck.filter((e) => ok.has(e.job.id)).map((e) => e.job), 'shutdown');
        } catch (err) {
          this.#log.warn({ err }, 'baton: releasing stuck leases failed');
        }
      }
    }
    await this.#completer.drain();
    await this.#heartbeater.stop();
    await this.#stranded.idle();
    await this.#reaper.stop();
    await this.#presence?.stop();
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
    const [result] = await this.enqueueMany([spec], opts);
    return result as EnqueueResult;
  }

  async enqueueMany(specs: JobSpec[], opts: EnqueueOptions = {}): Promise<EnqueueResult[]> {
    if (!Array.isArray(specs) || specs.length > ENQUEUE_BATCH_MAX) {
      throw new BatonError('INVALID_ARGUMENT', `jobs must be an array of at most ${ENQUEUE_BATCH_MAX} specs`);
    }
    if (specs.length === 0) return [];
    const jobs = specs.map((s, i) => normalizeSpec(s, this.config.maxAttemptsDefault, specs.length > 1 ? i : undefined));
    const notify = opts.notify !== false;
    const queues = [...new Set(jobs.filter((j) => j.runAt === null && j.delayMs === 0).map((j) => j.queue))];
    const channels = (qs: string[]) => qs.map((q) => channelFor(this.config.schema, q));
    // Autocommit: the leading-edge NOTIFYs run as their own statement in the insert's round
    // trip (after its commit, outside its transaction, before the enqueue is answered).
    const ahead = !opts.client && notify && this.config.dispatch === 'notify' ? this.#notifier.takeLeading(queues) : [];
    const results = await this.#d.executor.jobInsertMany({
      jobs,
      ...(opts.client ? { client: opts.client } : {}),
      // In the caller's transaction the NOTIFY rides in the insert statement and is delivered
      // at their COMMIT (Baton cannot see that commit to notify after it).
      ...(opts.client && notify ? { notify: channels(queues) } : {}),
      ...(ahead.length > 0 ? { notifyAfter: { channels: channels(ahead), onError: this.#onNotifyError } } : {}),
    });
    const created = results.filter((r) => r.created);
    for (const q of new Set(created.map((r) => r.job.queue))) {
      this.events.emit('enqueued', { queue: q, count: created.filter((r) => r.job.queue === q).length });
    }
    // The insert has committed: wake local dispatchers, and owe a trailing NOTIFY for queues
    // whose debounce window was already open.
    if (!opts.client && notify && created.length > 0) this.#wakeQueues(queues, ahead);
    return results;
  }

  async wake(queue: string): Promise<void> {
    this.#wakeQueues([queue]);
  }

  /** Wakes `queues` here and, in notify mode, elsewhere (except those `notified` already). */
  #wakeQueues(queues: string[], notified: string[] = []): void {
    if (queues.length === 0) return;
    for (const q of queues) this.#dispatchers.get(q)?.wake();
    const rest = queues.filter((q) => !notified.includes(q));
    if (this.config.dispatch === 'notify' && rest.length > 0) this.#notifier.notify(rest);
  }

  #wakeAll(): void {
    for (const d of this.#dispatchers.values()) d.wake();
  }

  /**
   * Whether claims may go out before the presence lock is first held. A generated worker id
   * has no row in `workers` until presence inserts it with the lock held, so no sweep can mark
   * it gone and its leases are reclaimed only at expiry. A configured id may name the row of
   * an earlier process that a sweep is about to mark gone, so it waits for the lock.
   */
  get #claimsBeforePresence(): boolean {
    return this.config.workerIdGenerated;
  }

  /**
   * No claim without the presence lock once it has been held: after our session is gone, any
   * reaper may take leases we hold (fast reclaim), so a lease taken then could run twice;
   * onAcquired wakes the loops again. Before the first acquisition, see #claimsBeforePresence.
   */
  #mayClaim(): boolean {
    if (!this.#presence) return false;
    return this.#presence.held || (!this.#presenceAcquired && this.#claimsBeforePresence);
  }

  #claimAndStart(dispatcher: QueueDispatcher, limit: number): Promise<number> {
    if (!this.#mayClaim()) return Promise.resolve(0);
    const claim = this.#claim(dispatcher, limit);
    this.#claims.add(claim);
    const settled = () => void this.#claims.delete(claim);
    claim.then(settled, settled);
    return claim;
  }

  async #claim(dispatcher: QueueDispatcher, limit: number): Promise<number> {
    const { executor, config } = { executor: this.#d.executor, config: this.config };
    // With a configured id, an earlier process may have held leases under it: bound what is
    // ours before any claim of ours can take a token (see StrandedLeasesDeps.tokenFloor). Two
    // queues may both read it; either answer is safe, as both precede their claims.
    if (this.#tokenFloor === null) this.#tokenFloor = await executor.jobTokenHighWater();
    const provenAt = monotonicMs();
    const t0 = performance.now();
    let jobs: LeasedJob[];
    try {
      jobs = await executor.jobClaim({
        queue: dispatcher.queue,
        limit,
        owner: config.workerId,
        leaseMs: config.leaseMs,
        intoRunning: config.claimIntoRunning,
      });
    } catch (err) {
      // It may have committed with its reply lost: its leases would be ours without our knowing.
      this.#stranded.suspect();
      throw err;
    }
    if (jobs.length === 0) return 0;
    this.#counters.claimed += jobs.length;
    this.events.emit('claimed', { queue: dispatcher.queue, count: jobs.length, durationMs: performance.now() - t0 });
    if (!config.claimIntoRunning && !this.#stopping) {
      const leases = jobs.map((j) => ({ id: j.id, token: j.token }));
      let ok: Set<string>;
      try {
        ok = await executor.jobMarkRunningMany({ leases });
      } catch (err) {
        await this.#release(jobs);
        throw err;
      }
      if (ok.size < jobs.length) this.#fenced('start', jobs.length - ok.size);
      jobs = jobs.filter((j) => ok.has(j.id)).map((j): LeasedJob => ({ ...j, state: 'running', startedAt: new Date() }));
    }
    // A claim answered past the heartbeat deadline (it waited for a pool connection, or its
    // round trip stalled) proves its leases only from when it was asked for, so they count as
    // lost already: started now, the handlers would run while another worker may take the
    // jobs, and their outcomes would be dropped. Give them back unstarted instead.
    const waitedMs = monotonicMs() - provenAt;
    const late = waitedMs > config.heartbeatDeadlineMs;
    if (this.#stopping || late) {
      // Claimed but never started: give them back with the attempt refunded.
      if (!this.#stopping) {
        const fields = { queue: dispatcher.queue, count: jobs.length, waitedMs: Math.round(waitedMs) };
        this.#log.warn(fields, 'baton: claim answered past the heartbeat deadline; released unstarted');
      }
      await this.#release(jobs, this.#stopping ? 'shutdown' : 'late');
      return this.#stopping ? jobs.length : 0;
    }
    for (const job of jobs) {
      // We still run this job under an older token: that lease was reclaimed (expired or reaped)
      // and we claimed the job again. The old run has lost its lease; abort it now.
      const stale = this.#leases.get(job.id);
      if (stale) this.#leaseLost(stale, 'reclaimed');
      const entry = this.#leases.add(job, provenAt);
      dispatcher.acquired();
      runJob(entry, dispatcher, this.#runner);
    }
    return jobs.length;
  }

  /** Gives unstarted leases back, attempt refunded; `reason` is reported on the 'released' event. */
  async #release(jobs: LeasedJob[], reason?: 'late' | 'shutdown'): Promise<void> {
    if (jobs.length === 0) return;
    const leases = jobs.map((j) => ({ id: j.id, token: j.token }));
    let ok: Set<string>;
    try {
      ok = await this.#d.executor.jobReleaseMany({ leases, refundAttempt: true });
    } catch (err) {
      // Still ours, and no longer known to us: found and released by the stranded-lease sweep.
      this.#stranded.suspect();
      throw err;
    }
    if (ok.size < jobs.length) this.#fenced('release', jobs.length - ok.size);
    if (reason) this.#emitReleased(jobs.filter((j) => ok.has(j.id)), reason);
  }

  #emitReleased(jobs: ReadonlyArray<{ queue: string }>, reason: 'stranded' | 'late' | 'shutdown'): void {
    const byQueue = new Map<string, number>();
    for (const j of jobs) byQueue.set(j.queue, (byQueue.get(j.queue) ?? 0) + 1);
    for (const [queue, count] of byQueue) this.events.emit('released', { queue, count, reason });
  }

  #leaseLost(entry: InFlight, why: 'fenced' | 'deadline' | 'reclaimed'): void {
    if (!this.#leases.markLost(entry)) return;
    this.#counters.leasesLost++;
    if (why === 'fenced') this.#fenced('heartbeat', 1);
    this.#log.warn({ jobId: entry.job.id, token: entry.token, why }, 'baton: lease lost; handler aborted, nothing will be written');
    this.events.emit('leaseLost', { job: entry.job });
  }

  #fenced(kind: 'complete' | 'fail' | 'heartbeat' | 'start' | 'release', count: number): void {
    this.#counters.fencedWrites += count;
    this.events.emit('fenced', { kind, count });
  }

  stats(): EngineStats {
    const slots: EngineStats['slots'] = {};
    for (const d of this.#dispatchers.values()) slots[d.queue] = { concurrency: d.concurrency, inFlight: d.inFlight };
    return { ...this.#counters, slots, presenceHeld: this.#presence ? this.#presence.held : null };
  }
}
