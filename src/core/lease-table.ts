// In-flight leases of this process. A lease is "proven" at the moment a claim
// or heartbeat that returned it was sent; past provenAt + heartbeatDeadlineMs the
// worker can no longer prove ownership and must stop (self-fencing). A cancel request for
// a lease not in the table yet is kept a while, for the claim that is about to add it.

import { LeaseLostError } from '../types/errors.ts';
import type { LeasedJob } from '../types/job.ts';
import type { Clock } from './clock.ts';

/** One lease this process holds. Its AbortSignal is made on first use: most handlers never read it. */
export class InFlight {
  readonly job: LeasedJob;
  readonly token: string;
  /** 'running': handler executing; 'writing': handler settled, its outcome is being written (the completer decides). */
  phase: 'running' | 'writing' = 'running';
  /** Clock ms when a round trip that proved the lease was sent. */
  provenAt: number;
  lost = false;
  /** Aborted by the engine's own drain deadline: a failure that follows is not the job's fault. */
  drainAborted = false;
  /** Its job has a cancel request and the signal was aborted for it (the lease is still held). */
  cancelRequested = false;
  /** The latest progress its handler reported and the heartbeater has not sent yet (JSON text), else null. */
  progressDue: { text: string; value: unknown } | null = null;
  readonly #clock: Clock;
  #controller: AbortController | null = null;
  #aborted: { reason: unknown } | null = null;

  constructor(job: LeasedJob, provenAt: number, clock: Clock) {
    this.job = job;
    this.token = job.token;
    this.provenAt = provenAt;
    this.#clock = clock;
  }

  /** True once no round trip has proven this lease for longer than `deadlineMs` (self-fencing). */
  unproven(deadlineMs: number): boolean {
    return this.#clock.now() - this.provenAt > deadlineMs;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#aborted.reason);
    }
    return this.#controller.signal;
  }

  /** Aborts the handler's signal (once; later reasons are ignored, as with AbortController). */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = { reason };
    this.#controller?.abort(reason);
  }
}

/** How a cancel request reached this process (the heartbeat's own reports go to the worker directly). */
export type CancelVia = 'notify' | 'local';
/** How long a request for a lease not in the table is kept: a claim's answer comes later than this only past its heartbeat deadline. */
export const EARLY_CANCEL_MS = 60_000;
/** At most this many are kept (requests for leases other processes hold arrive by NOTIFY too). */
const EARLY_CANCEL_MAX = 1_024;

export class LeaseTable {
  readonly #entries = new Map<string, InFlight>();
  readonly #clock: Clock;
  /** Cancel requests by `id:token` for leases not added yet, oldest first, with when they came. */
  readonly #early = new Map<string, { at: number; via: CancelVia }>();
  readonly #onCancel: (entry: InFlight, via: CancelVia) => void;

  /** `onCancel`: called for a held lease with a cancel request, at once or when `add` adds it (see requestCancel). */
  constructor(clock: Clock, onCancel: (entry: InFlight, via: CancelVia) => void = () => {}) {
    this.#clock = clock;
    this.#onCancel = onCancel;
  }

  add(job: LeasedJob, provenAt: number): InFlight {
    const entry = new InFlight(job, provenAt, this.#clock);
    this.#entries.set(job.id, entry);
    if (this.#early.size > 0) {
      const key = `${job.id}:${job.token}`;
      const early = this.#early.get(key);
      if (early) {
        this.#early.delete(key);
        this.#onCancel(entry, early.via);
      }
    }
    return entry;
  }

  /**
   * A cancel request for lease `token` of job `id`: answered at once when the table holds that
   * lease, else kept for EARLY_CANCEL_MS, since a claim commits before its rows are added here
   * and a cancel made or notified in between would otherwise wait for the first heartbeat (a
   * third of the lease). A request for an older or newer lease of the job is not this one's.
   */
  requestCancel(id: string, token: string, via: CancelVia): void {
    const held = this.#entries.get(id);
    if (held?.token === token) {
      this.#onCancel(held, via);
      return;
    }
    const now = this.#clock.now();
    for (const [key, { at }] of this.#early) {
      if (now - at < EARLY_CANCEL_MS && this.#early.size < EARLY_CANCEL_MAX) break;
      this.#early.delete(key);
    }
    this.#early.set(`${id}:${token}`, { at: now, via });
  }

  get(id: string): InFlight | undefined {
    return this.#entries.get(id);
  }

  delete(entry: InFlight): void {
    if (this.#entries.get(entry.job.id) === entry) this.#entries.delete(entry.job.id);
  }

  /** Marks the lease lost and aborts its handler. Returns false if it already was. */
  markLost(entry: InFlight, reason?: unknown): boolean {
    if (entry.lost) return false;
    entry.lost = true;
    entry.abort(reason ?? new LeaseLostError(entry.job.id, entry.token));
    return true;
  }

  live(): InFlight[] {
    return [...this.#entries.values()].filter((e) => !e.lost);
  }

  get size(): number {
    return this.#entries.size;
  }
}
