// A service that runs one task at start and then again each interval after the last run
// settled, while started. Invariants: runs never overlap; stop waits for a run in flight and
// schedules nothing more; a failed run goes to onError and the next one still comes.

import type { Service } from './service.ts';

export interface PeriodicOptions {
  intervalMs: number;
  task: () => Promise<unknown>;
  /** Must not throw: the loop has no one else to tell. */
  onError: (err: unknown) => void;
}

export class Periodic implements Service {
  readonly name: string;
  readonly #o: PeriodicOptions;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #stopped = true;

  constructor(name: string, opts: PeriodicOptions) {
    this.name = name;
    this.#o = opts;
  }

  /**
   * The first run at once, or, when a run from before a stop is still in flight, once that run
   * settles plus the interval; a start while started is a no-op.
   */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    if (!this.#running) this.#schedule(0);
  }

  #schedule(ms: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#running = this.#runOnce().finally(() => {
        this.#running = null;
        if (!this.#stopped) this.#schedule(this.#o.intervalMs);
      });
    }, ms);
  }

  /** One run; a task that throws, even before it returns its promise, goes to onError. */
  async #runOnce(): Promise<void> {
    try {
      await this.#o.task();
    } catch (err) {
      this.#o.onError(err);
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}
