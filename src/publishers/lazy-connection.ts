// One broker connection per publisher: opened on the first publish, opened again after it was
// lost. A failed open is forgotten, so the next publish tries again; failing to connect is a
// retry (a missing optional package, INVALID_CONFIG, is not).

import { PublishError } from '../core/outbox/publisher.ts';

export class LazyConnection<T> {
  #opening: Promise<T> | null = null;
  readonly #open: () => Promise<T>;
  readonly #broker: string;

  constructor(broker: string, open: () => Promise<T>) {
    this.#broker = broker;
    this.#open = open;
  }

  /** The connection, opening it if none is open or opening. */
  async get(): Promise<T> {
    if (!this.#opening) {
      const p = this.#open();
      this.#opening = p;
      p.catch(() => {
        if (this.#opening === p) this.#opening = null;
      });
    }
    try {
      return await this.#opening;
    } catch (err) {
      if ((err as { code?: unknown }).code === 'INVALID_CONFIG') throw err;
      throw new PublishError('retry', `${this.#broker}: cannot connect: ${(err as Error).message}`, { cause: err });
    }
  }

  /** The connection closed or broke: the next get() opens a new one. */
  forget(): void {
    this.#opening = null;
  }

  /** Forgets the connection and hands it over (null if none opened), for closing. */
  async take(): Promise<T | null> {
    const c = await this.#opening?.catch(() => null);
    this.#opening = null;
    return c ?? null;
  }
}
