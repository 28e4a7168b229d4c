// The claim protocol, from a dispatcher's request to a started handler: who may claim (the
// presence gate), the claim itself (one statement: fresh tokens, expiry, attempt spent), what
// happens to jobs claimed too late or while stopping (given back, attempt refunded), and the
// recovery of leases whose claim reply was lost. Every write here is fenced by token.
//
// Reading order: claimAndStart -> #claim -> (#release | runJob); #sweep for lost replies.

import type { Executor, Lease, Presence } from '../driver/executor.ts';
import type { LeasedJob } from '../types/job.ts';
import type { Clock } from './clock.ts';
import type { EngineConfig } from './config.ts';
import type { ClaimOutcome, QueueDispatcher } from './dispatcher.ts';
import type { EngineEventEmitter } from './events.ts';
import type { FlowState } from './flow-control.ts';
import { type RunnerDeps, runJob } from './job-runner.ts';
import type { InFlight, LeaseTable } from './lease-table.ts';
import type { Logger } from './logger.ts';

/** Above every token (a bigint sequence's maximum is 2^63 - 1). */
const INT8_LIMIT = 2n ** 63n;

export type ReleaseReason = 'stranded' | 'late' | 'shutdown';

export interface ClaimerDeps {
  executor: Executor;
  config: EngineConfig;
  clock: Clock;
  leases: LeaseTable;
  flow: FlowState;
  runner: RunnerDeps;
  events: EngineEventEmitter;
  log: Logger;
  counters: { claimed: number; strandedReleased: number };
  /** The running lease of a job we just claimed again is stale: abort it. */
  onReclaimed: (stale: InFlight) => void;
  onFenced: (kind: 'start' | 'release', count: number) => void;
  wakeQueues: (queues: string[]) => void;
  onError: (err: unknown) => void;
}

export class Claimer {
  readonly #d: ClaimerDeps;
  /** Claims in flight, each settled once its jobs are in the lease table or given back. */
  readonly #claims = new Set<Promise<ClaimOutcome>>();
  #presence: Presence | null = null;
  /** The presence lock has been held at least once. */
  #presenceAcquired = false;
  #stopping = false;
  /**
   * Tokens at or below this were handed out before this worker's first claim. With a configured
   * worker id an earlier process may have held leases under the same id: those are not ours to
   * refund (it may have crashed running them), so the sweep leaves them to the reaper. A
   * generated id is this process's alone. Read before the first claim can take a token.
   */
  #tokenFloor: bigint | null;
  /** Lost-reply sweeps run until this (clock ms), on each heartbeat tick. */
  #suspectUntil = Number.NEGATIVE_INFINITY;
  #sweeping: Promise<void> | null = null;
  #sweepAgain = false;

  constructor(deps: ClaimerDeps) {
    this.#d = deps;
    this.#tokenFloor = deps.config.workerIdGenerated ? 0n : null;
  }

  /** The presence lock claims wait for (null: this process claims nothing). */
  set presence(p: Presence | null) {
    this.#presence = p;
  }

  /** Called each time the presence lock is (re-)acquired. */
  presenceAcquired(): void {
    this.#presenceAcquired = true;
  }

  /** From now on, whatever a claim returns is given back unstarted. */
  stop(): void {
    this.#stopping = true;
  }

  /**
   * Whether claims may go out before the presence lock is first held. A generated worker id
   * has no row in `workers` until presence inserts it with the lock held, so no sweep can mark
   * it gone and its leases are reclaimed only at expiry. A configured id may name the row of
   * an earlier process that a sweep is about to mark gone, so it waits for the lock.
   */
  get claimsBeforePresence(): boolean {
    return this.#d.config.workerIdGenerated;
  }

  /**
   * No claim without the presence lock once it has been held: after our session is gone, any
   * reaper may take leases we hold (fast reclaim), so a lease taken then could run twice;
   * onAcquired wakes the loops again. Before the first acquisition, see claimsBeforePresence.
   */
  #mayClaim(): boolean {
    if (!this.#presence) return false;
    return this.#presence.held || (!this.#presenceAcquired && this.claimsBeforePresence);
  }

  /** Claims up to `limit` jobs of the dispatcher's queue and starts them. */
  claimAndStart(dispatcher: QueueDispatcher, limit: number): Promise<ClaimOutcome> {
    if (!this.#mayClaim()) return Promise.resolve({ got: 0 });
    const claim = this.#claim(dispatcher, limit);
    this.#claims.add(claim);
    const settled = () => void this.#claims.delete(claim);
    claim.then(settled, settled);
    return claim;
  }

  async #claim(dispatcher: QueueDispatcher, limit: number): Promise<ClaimOutcome> {
    const { executor, config, clock } = this.#d;
    const flow = this.#d.flow.queue(dispatcher.queue);
    const controlled = this.#d.flow.controlled(dispatcher.queue);
    // Two queues may both read the floor; either answer is safe, as both precede their claims.
    if (this.#tokenFloor === null) this.#tokenFloor = await executor.jobTokenHighWater();
    let provenAt = clock.now();
    const t0 = performance.now();
    let jobs: LeasedJob[];
    const outcome: ClaimOutcome = { got: 0 };
    try {
      const p = { queue: dispatcher.queue, limit, owner: config.workerId, leaseMs: config.leaseMs, intoRunning: config.claimIntoRunning };
      if (!flow.fair && !controlled) {
        jobs = await executor.jobClaim(p);
      } else {
        // Every field written out: a spread of `p` followed by more properties costs several µs
        // on Node 20 (V8's slow path for object literals), on the path from a wake-up to a claim.
        const r = await executor.jobClaimFlow({
          queue: p.queue,
          limit: p.limit,
          owner: p.owner,
          leaseMs: p.leaseMs,
          intoRunning: p.intoRunning,
          fair: flow.fair,
          controlled,
          cursor: flow.cursor,
          keyCursor: flow.keyCursor,
          solo: flow.solo,
          plain: flow.plain,
          // A controlled claim's leases run from its claim statement, after its lock statement.
          onLeaseStatement: () => {
            provenAt = clock.now();
          },
        });
        jobs = r.jobs;
        flow.cursor = r.cursor;
        flow.keyCursor = r.keyCursor;
        flow.solo = r.solo;
        flow.plain = r.plain;
        // A fair claim stops at its tenants' slices, so a short one may leave jobs behind.
        outcome.again = !controlled && r.sliced;
        outcome.more = r.limited;
        outcome.wakeInMs = r.wakeMs;
      }
    } catch (err) {
      // It may have committed with its reply lost: its leases would be ours without our knowing.
      this.#suspect();
      throw err;
    }
    if (jobs.length === 0) return outcome;
    this.#d.counters.claimed += jobs.length;
    this.#d.events.emit('claimed', { queue: dispatcher.queue, count: jobs.length, durationMs: performance.now() - t0 });
    if (!config.claimIntoRunning && !this.#stopping) {
      const leases = jobs.map((j) => ({ id: j.id, token: j.token }));
      let ok: Set<string>;
      try {
        ok = await executor.jobMarkRunningMany({ leases });
      } catch (err) {
        await this.#release(jobs);
        throw err;
      }
      if (ok.size < jobs.length) this.#d.onFenced('start', jobs.length - ok.size);
      jobs = jobs.filter((j) => ok.has(j.id)).map((j): LeasedJob => ({ ...j, state: 'running', startedAt: new Date() }));
    }
    // A claim answered past the heartbeat deadline (it waited for a pool connection, or its
    // round trip stalled) proves its leases only from when it was asked for, so they count as
    // lost already: started now, the handlers would run while another worker may take the
    // jobs, and their outcomes would be dropped. Give them back unstarted instead.
    const waitedMs = clock.now() - provenAt;
    const late = waitedMs > config.heartbeatDeadlineMs;
    if (this.#stopping || late) {
      if (!this.#stopping) {
        const fields = { queue: dispatcher.queue, count: jobs.length, waitedMs: Math.round(waitedMs) };
        this.#d.log.warn(fields, 'baton: claim answered past the heartbeat deadline; released unstarted');
      }
      await this.#release(jobs, this.#stopping ? 'shutdown' : 'late');
      return { got: this.#stopping ? jobs.length : 0 };
    }
    for (const job of jobs) {
      // We still run this job under an older token: that lease was reclaimed (expired or reaped)
      // and we claimed the job again. The old run has lost its lease; abort it now.
      const stale = this.#d.leases.get(job.id);
      if (stale) this.#d.onReclaimed(stale);
      const entry = this.#d.leases.add(job, provenAt);
      dispatcher.acquired();
      runJob(entry, dispatcher, this.#d.runner);
    }
    outcome.got = jobs.length;
    return outcome;
  }

  /** Gives unstarted leases back, attempt refunded; `reason` is reported on the 'released' event. */
  async #release(jobs: ReadonlyArray<Lease & { queue: string }>, reason?: ReleaseReason): Promise<void> {
    if (jobs.length === 0) return;
    let ok: Set<string>;
    try {
      ok = await this.#d.executor.jobReleaseMany({ leases: jobs.map((j) => ({ id: j.id, token: j.token })), refundAttempt: true });
    } catch (err) {
      // Still ours, and no longer known to us: found and released by the sweep.
      this.#suspect();
      throw err;
    }
    if (ok.size < jobs.length) this.#d.onFenced('release', jobs.length - ok.size);
    if (reason)
      this.emitReleased(
        jobs.filter((j) => ok.has(j.id)),
        reason,
      );
  }

  /** Gives back the leases of handlers the drain deadline aborted that never settled. */
  async releaseStuck(entries: readonly InFlight[]): Promise<void> {
    await this.#release(
      entries.map((e) => ({ id: e.job.id, token: e.token, queue: e.job.queue })),
      'shutdown',
    );
  }

  emitReleased(jobs: ReadonlyArray<{ queue: string }>, reason: ReleaseReason): void {
    const byQueue = new Map<string, number>();
    for (const j of jobs) byQueue.set(j.queue, (byQueue.get(j.queue) ?? 0) + 1);
    for (const [queue, count] of byQueue) this.#d.events.emit('released', { queue, count, reason });
  }

  // ---- leases whose claim reply was lost --------------------------------------------------
  // A claim or release that failed without a definite answer may have committed. Then, and on
  // each heartbeat tick for a lease length after (a statement cut off by its timeout may still
  // commit), read the leases the table says we own; once every claim in flight at that read
  // has settled, those still not in the lease table under that token were never started here:
  // give them back, attempt refunded. Older than a lease, they are the reaper's anyway.

  #suspect(): void {
    this.#suspectUntil = this.#d.clock.now() + this.#d.config.leaseMs;
    this.#sweep();
  }

  /** Called on each heartbeat tick. */
  tick(): void {
    if (this.#d.clock.now() < this.#suspectUntil) this.#sweep();
  }

  /** Resolves when no sweep is running (stop). */
  async idle(): Promise<void> {
    while (this.#sweeping) await this.#sweeping;
  }

  #sweep(): void {
    if (this.#sweeping) {
      this.#sweepAgain = true;
      return;
    }
    this.#sweeping = this.#sweepOnce()
      .catch((err: unknown) => this.#d.onError(err))
      .finally(() => {
        this.#sweeping = null;
        if (this.#sweepAgain) {
          this.#sweepAgain = false;
          this.#sweep();
        }
      });
  }

  async #sweepOnce(): Promise<void> {
    const { executor, leases, config } = this.#d;
    const owned = await executor.jobLeasesOwned({ owner: config.workerId });
    if (owned.length === 0) return;
    await Promise.allSettled([...this.#claims]);
    // Before the floor is known no claim of ours has taken a token: nothing owned is ours.
    const floor = this.#tokenFloor ?? INT8_LIMIT;
    const stranded = owned.filter((l) => leases.get(l.id)?.token !== l.token && BigInt(l.token) > floor);
    if (stranded.length === 0) return;
    const released = await executor.jobReleaseMany({ leases: stranded, refundAttempt: true });
    const jobs = stranded.filter((l) => released.has(l.id));
    if (jobs.length === 0) return;
    this.#d.counters.strandedReleased += jobs.length;
    this.#d.log.warn(
      { count: jobs.length, jobIds: jobs.slice(0, 20).map((j) => j.id) },
      'baton: released leases whose claim reply was lost (attempt refunded)',
    );
    this.emitReleased(jobs, 'stranded');
    this.#d.wakeQueues([...new Set(jobs.map((j) => j.queue))]);
  }
}
