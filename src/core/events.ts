// The engine's event emitter. A listener that throws is reported and changes nothing the
// engine does: the other listeners still run, and the emitting code carries on (a claim's
// jobs still start, a committed enqueue still resolves, a background loop keeps going).

import { EventEmitter } from 'node:events';
import type { EnqueueWarningCode, Job, JobProgress, TerminalState } from '../types/job.ts';

/** Events the engine emits (on baton.events) for metrics and logs. */
export interface EngineEvents {
  enqueued: [{ queue: string; count: number }];
  claimed: [{ queue: string; count: number; durationMs: number }];
  started: [{ job: Job; startLatencyMs: number }];
  succeeded: [{ job: Job; durationMs: number }];
  retried: [{ job: Job; error: unknown }];
  deadLettered: [{ job: Job; error: unknown }];
  fenced: [{ kind: 'complete' | 'fail' | 'heartbeat' | 'start' | 'release' | 'progress'; count: number }];
  /** A handler's progress report (ctx.progress) was stored, fenced by its lease: the latest value of one heartbeat interval. */
  progress: [{ job: Job; progress: JobProgress }];
  leaseLost: [{ job: Job }];
  /**
   * A job this process holds has a cancel request: its handler's signal was aborted with a
   * JobCancelledError, learned from the cancel NOTIFY, a heartbeat, or a cancel made here.
   */
  cancelSignalled: [{ job: Job; via: 'notify' | 'heartbeat' | 'local' }];
  /** A job this process ran ended cancelled: its attempt failed (or it was given back) after a cancel request. */
  cancelled: [{ job: Job; error: unknown }];
  reaped: [{ count: number; fast: boolean }];
  /** Finished jobs deleted by retention (on the leader), per state and queue. */
  purged: [{ state: TerminalState; queue: string; count: number }];
  /** This process took (true) or stopped trusting (false) the leader lease: lost it, let it lapse, or gave it up. */
  leadership: [{ leader: boolean }];
  /** Jobs enqueued that no live worker can run yet (see EnqueueResult.warnings). */
  enqueueWarning: [{ code: EnqueueWarningCode; queue: string; jobType: string; count: number }];
  /**
   * Leases given back unrun or unfinished, attempt refunded: 'stranded' (claimed with the
   * reply lost), 'late' (a claim answered past the heartbeat deadline), 'shutdown' (claimed
   * during stop(), or aborted by the drain deadline).
   */
  released: [{ queue: string; count: number; reason: 'stranded' | 'late' | 'shutdown' }];
  error: [{ where: string; error: unknown }];
}

type Listener = (...args: unknown[]) => unknown;

export class EngineEventEmitter extends EventEmitter<EngineEvents> {
  readonly #onListenerError: (event: string, error: unknown) => void;

  /** `onListenerError` logs a listener's throw (if it throws in turn, that is ignored). */
  constructor(onListenerError: (event: string, error: unknown) => void) {
    super();
    this.#onListenerError = onListenerError;
    // An 'error' event without listeners would throw; errors are reported, never fatal.
    this.on('error', () => undefined);
  }

  override emit<K extends keyof EngineEvents>(event: K, ...args: EngineEvents[K]): boolean;
  // Any other name, as the base class takes it. Without this overload the declaration is not
  // assignable to EventEmitter's own emit under @types/node 26 (TS2416 in a consumer's check
  // with skipLibCheck off); Exclude keeps a known event with the wrong payload an error here.
  // biome-ignore lint/suspicious/noExplicitAny: the base class's own rest type
  override emit<E extends string | symbol>(event: Exclude<E, keyof EngineEvents>, ...args: any[]): boolean;
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    // rawListeners copies the list (as emit does), so a listener may add or remove listeners;
    // it also holds once() wrappers, which remove themselves when called.
    const listeners = this.rawListeners(event) as Listener[];
    if (listeners.length === 0) return false;
    for (const listener of listeners) {
      try {
        listener.apply(this, args);
      } catch (error) {
        try {
          this.#onListenerError(String(event), error);
        } catch {
          // Logging a value whose getters throw can throw too: it is still emitted below.
        }
        // Reported once as an 'error' event too, unless an 'error' listener is what threw.
        if (event !== 'error') this.emit('error', { where: `listener:${String(event)}`, error });
      }
    }
    return true;
  }
}
