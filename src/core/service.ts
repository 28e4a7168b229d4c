// One shape for every long-running part of the engine (claim loops, heartbeats, reaper,
// retention, the cron ticker, the relay, ...), and groups that start a list in order and stop
// it in reverse. Invariants: a stop before start is a no-op and stop is idempotent; a group
// stops every member it started, even when one's stop fails, and then reports the failures.

import { BatonError } from '../types/errors.ts';

export interface Service {
  /** For errors and logs. */
  readonly name: string;
  /** Sync starts stay sync inside a group: a part whose order within a tick matters keeps it. */
  start(): void | Promise<void>;
  /** Idempotent; a no-op before start. Resolves once the part has settled (its work in flight done). */
  stop(): Promise<void>;
}

/** A service from plain functions: either side may be left out (a part that only needs closing, say). */
export function service(name: string, parts: { start?: () => void | Promise<void>; stop?: () => Promise<void> }): Service {
  return { name, start: parts.start ?? (() => undefined), stop: parts.stop ?? (() => Promise.resolve()) };
}

export interface ServiceGroupOptions {
  /**
   * 'reverse' (default): each member's stop is awaited before the next one's begins, last started
   * first. 'together': every member's stop begins at once (last started first) and all are awaited.
   */
  stop?: 'reverse' | 'together';
}

/**
 * Starts its members in order and stops them in reverse. A member counts as started once its
 * start() was called, even if it threw or is still running: stop() then stops it too, so a
 * half-started part (a connection still being opened) is cleaned up by its own stop. The group
 * may be started again after a stop (the leader group is, at each new leadership).
 */
export class ServiceGroup implements Service {
  readonly name: string;
  readonly #members: readonly Service[];
  readonly #together: boolean;
  /** The members whose start() was called since the last stop, in start order. */
  #started: Service[] = [];
  #stopping: Promise<void> | null = null;
  /** Counts stop() calls: a start() that sees it change was interrupted by a stop. */
  #stops = 0;

  constructor(name: string, members: readonly Service[], opts: ServiceGroupOptions = {}) {
    this.name = name;
    this.#members = members;
    this.#together = opts.stop === 'together';
  }

  get members(): readonly Service[] {
    return this.#members;
  }

  /**
   * Starts each member in order, awaiting those whose start is async. A stop() meanwhile makes
   * it start nothing more and reject with SHUTTING_DOWN; a member's failure rejects it as is
   * (the members started so far, the failed one included, are left for stop()).
   */
  async start(): Promise<void> {
    if (this.#started.length > 0) return;
    const stops = this.#stops;
    for (const m of this.#members) {
      if (this.#stops !== stops) throw stoppedWhileStarting(this.name);
      this.#started.push(m);
      const r = m.start();
      if (r instanceof Promise) await r;
    }
    if (this.#stops !== stops) throw stoppedWhileStarting(this.name);
  }

  /** Stops the started members in reverse; a failure does not skip the rest: all are reported together at the end. */
  stop(): Promise<void> {
    if (this.#stopping) return this.#stopping;
    this.#stops++;
    const started = this.#started.reverse();
    this.#started = [];
    const p = (this.#together ? stopTogether(started) : stopInTurn(started)).finally(() => {
      if (this.#stopping === p) this.#stopping = null;
    });
    this.#stopping = p;
    return p;
  }
}

async function stopInTurn(members: readonly Service[]): Promise<void> {
  const failed: ServiceStopFailure[] = [];
  for (const m of members) {
    try {
      await m.stop();
    } catch (error) {
      failed.push({ service: m.name, error });
    }
  }
  throwIfFailed(failed);
}

async function stopTogether(members: readonly Service[]): Promise<void> {
  // Each stop() is called in turn, so their synchronous parts run last-started first; one
  // that throws instead of rejecting does not keep the next from being called.
  const results = await Promise.allSettled(
    members.map((m) => {
      try {
        return m.stop();
      } catch (err) {
        return Promise.reject(err);
      }
    }),
  );
  const failed: ServiceStopFailure[] = [];
  results.forEach((r, i) => {
    if (r.status === 'rejected') failed.push({ service: (members[i] as Service).name, error: r.reason });
  });
  throwIfFailed(failed);
}

export interface ServiceStopFailure {
  service: string;
  error: unknown;
}

/** Several members' stops failed: `errors` has each one's, in stop order; `failures` names their services. */
export class ServiceStopError extends AggregateError {
  readonly failures: readonly ServiceStopFailure[];
  constructor(failures: readonly ServiceStopFailure[]) {
    super(
      failures.map((f) => f.error),
      `stopping ${failures.map((f) => f.service).join(', ')} failed`,
    );
    this.name = 'ServiceStopError';
    this.failures = failures;
  }
}

/** One failure rejects with its own error (what a caller of stop() saw before groups); several, with a ServiceStopError. */
function throwIfFailed(failed: readonly ServiceStopFailure[]): void {
  if (failed.length === 1) throw (failed[0] as ServiceStopFailure).error;
  if (failed.length > 1) throw new ServiceStopError(failed);
}

function stoppedWhileStarting(name: string): BatonError {
  return new BatonError('SHUTTING_DOWN', `stop() was called while ${name} was starting`);
}
