// The leader-only services (cron ticker, retention and vacuum, outbox retention) as one group
// that starts when this process takes the leader lease and stops when it loses it. The group
// only starts and stops them: each of their writes is still fenced by the lease's epoch in SQL,
// since a stop on a lost lease is seen late (a paused process) and a write may be in flight.

import { type Service, ServiceGroup } from './service.ts';

/** The lease as the group drives it (LeaderLease). */
export interface LeaseHandle {
  start(): void;
  /** Gives the lease up; reports the loss through the change callback. */
  stop(): Promise<void>;
}

export class Leadership implements Service {
  readonly name = 'leadership';
  readonly #lease: LeaseHandle;
  readonly #group: ServiceGroup;
  readonly #onError: (err: unknown) => void;
  /** Starts and stops of the group, one at a time and in the order the lease changed. */
  #transition: Promise<void> = Promise.resolve();
  #stopped: Promise<void> | null = null;

  constructor(lease: LeaseHandle, services: readonly Service[], onError: (err: unknown) => void) {
    this.#lease = lease;
    // Started in order on each new leadership, stopped in reverse when it ends.
    this.#group = new ServiceGroup('leader services', services);
    this.#onError = onError;
  }

  get services(): readonly Service[] {
    return this.#group.members;
  }

  /** Call from the lease's change callback. After stop(), a change starts nothing. */
  changed(leader: boolean): void {
    if (this.#stopped) return;
    this.#queue(() => (leader ? this.#group.start() : this.#group.stop()));
  }

  /** Starts trying for the lease; the services start once it is held. */
  start(): void {
    if (!this.#stopped) this.#lease.start();
  }

  /**
   * The services stop first (the ticker finishes the tick it is in, a retention sweep the
   * batch it is in), then the lease is given up, so another process can lead at its next try.
   */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      const group = this.#queue(() => this.#group.stop(), true);
      await this.#transition;
      await this.#lease.stop();
      await group;
    })();
    return this.#stopped;
  }

  /** Runs `step` after the transitions before it. Its failure is reported (and returned when `rethrow`), never left to stall the next. */
  #queue(step: () => Promise<void>, rethrow = false): Promise<void> {
    const run = this.#transition.then(step);
    this.#transition = run.catch(rethrow ? () => undefined : this.#onError);
    return rethrow ? run : this.#transition;
  }
}
