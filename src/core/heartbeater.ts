// Batched heartbeats: one statement renews every lease this process holds, every
// heartbeatMs. A row missing from the result means the lease is lost (abort the
// handler, write nothing). A row with a cancel request aborts its handler's signal
// (the lease stays held: the handler's outcome decides how the job ends). A failed round trip is NOT lease loss: the expiry stays
// the real deadline, enforced locally by heartbeatDeadlineMs. The deadline has its
// own timer: a round trip that hangs (blackholed socket, pool with no free
// connection) must not postpone it until the query or pool timeout fires.
// Progress reports (ctx.progress) ride the same tick: the latest value of each lease that has
// one, in one more fenced statement, sent only when some handler reported since the last tick.

import type { Executor } from '../driver/executor.ts';
import type { Clock } from './clock.ts';
import type { EngineConfig } from './config.ts';
import type { InFlight, LeaseTable } from './lease-table.ts';
import type { Service } from './service.ts';

export interface HeartbeaterDeps {
  executor: Executor;
  config: EngineConfig;
  clock: Clock;
  leases: LeaseTable;
  onLost: (entry: InFlight, why: 'fenced' | 'deadline') => void;
  /** The job of a lease still held has a cancel request (seen by this heartbeat). */
  onCancelRequested: (entry: InFlight) => void;
  /** A progress report was stored (fenced by the entry's lease). */
  onProgress?: (entry: InFlight, value: unknown) => void;
  /** Progress reports refused by the fence (the lease was no longer current). */
  onProgressFenced?: (count: number) => void;
  onError: (err: unknown) => void;
  /** Runs after each tick (used to refresh the worker row). */
  afterTick?: () => Promise<void>;
}

export class Heartbeater implements Service {
  readonly name = 'heartbeater';
  readonly #d: HeartbeaterDeps;
  #timer: NodeJS.Timeout | null = null;
  #deadlineTimer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;

  constructor(deps: HeartbeaterDeps) {
    this.#d = deps;
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      this.#enforceDeadline();
      if (!this.#running) this.#running = this.tick().finally(() => (this.#running = null));
    }, this.#d.config.heartbeatMs);
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    if (this.#deadlineTimer) clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = null;
    await this.#running;
  }

  /**
   * Gives up every running lease not proven within heartbeatDeadlineMs, and (while started)
   * arms a timer for the next one due, whether or not a heartbeat round trip is in flight.
   */
  #enforceDeadline(): void {
    const { config, leases, clock } = this.#d;
    const now = clock.now();
    let next = Number.POSITIVE_INFINITY;
    for (const e of leases.live()) {
      if (e.phase !== 'running') continue;
      const due = e.provenAt + config.heartbeatDeadlineMs;
      if (now > due) this.#d.onLost(e, 'deadline');
      else next = Math.min(next, due);
    }
    if (this.#deadlineTimer) clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = null;
    if (this.#timer && next !== Number.POSITIVE_INFINITY) {
      this.#deadlineTimer = setTimeout(() => this.#enforceDeadline(), next - now + 1);
    }
  }

  /** One heartbeat round; exposed for tests. */
  async tick(): Promise<void> {
    const { executor, config, leases } = this.#d;
    const sent = leases.live();
    if (sent.length > 0) {
      const sentAt = this.#d.clock.now();
      try {
        const { alive, cancelRequested } = await executor.jobHeartbeatMany({
          leases: sent.map((e) => ({ id: e.job.id, token: e.token })),
          leaseMs: config.leaseMs,
        });
        for (const e of sent) {
          if (alive.has(e.job.id)) {
            e.provenAt = Math.max(e.provenAt, sentAt);
            if (cancelRequested.has(e.job.id) && leases.get(e.job.id) === e) this.#d.onCancelRequested(e);
          }
          // A job whose outcome write is in flight may legitimately have left the live states.
          else if (e.phase === 'running' && leases.get(e.job.id) === e) this.#d.onLost(e, 'fenced');
        }
      } catch (err) {
        this.#d.onError(err);
      }
    }
    const reported = sent.filter((e) => e.progressDue !== null && !e.lost);
    if (reported.length > 0) await this.#sendProgress(reported);
    this.#enforceDeadline();
    await this.#d.afterTick?.().catch(this.#d.onError);
  }

  /** Stores the latest report of each entry; a report made meanwhile waits for the next tick. */
  async #sendProgress(entries: InFlight[]): Promise<void> {
    const reports = entries.map((e) => {
      const r = e.progressDue as NonNullable<InFlight['progressDue']>;
      e.progressDue = null;
      return r;
    });
    try {
      const written = await this.#d.executor.jobProgressMany({
        items: entries.map((e, i) => ({ id: e.job.id, token: e.token, progress: (reports[i] as { text: string }).text })),
      });
      let fenced = 0;
      entries.forEach((e, i) => {
        if (written.has(e.job.id)) this.#d.onProgress?.(e, (reports[i] as { value: unknown }).value);
        // A job whose outcome was written meanwhile left the live states: its own outcome won,
        // no other holder fenced the report off (as with heartbeats, above).
        else if (e.phase === 'running' && this.#d.leases.get(e.job.id) === e) fenced++;
      });
      if (fenced > 0) this.#d.onProgressFenced?.(fenced);
    } catch (err) {
      // Not sent: tried again at the next tick, unless a newer report replaced it.
      entries.forEach((e, i) => {
        if (!e.lost) e.progressDue ??= reports[i] ?? null;
      });
      this.#d.onError(err);
    }
  }
}
