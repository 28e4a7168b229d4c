// Wake-up NOTIFYs: one channel per queue, debounced per queue on the leading
// edge. The first enqueue in a quiet window notifies at once (sparse traffic pays
// no added latency, and its NOTIFY rides in the insert statement itself); later ones inside
// the window coalesce into one trailing NOTIFY, sent on its own after the window closes.

import { createHash } from 'node:crypto';

/** The NOTIFY channel of a queue: a fixed-length hex identifier, safe to LISTEN on unquoted. */
export function channelFor(schema: string, queue: string): string {
  return `baton_${createHash('sha1').update(`${schema}\u0000${queue}`).digest('hex').slice(0, 24)}`;
}

export interface NotifierOptions {
  debounceMs: number;
  send: (channels: string[]) => Promise<void>;
  channelOf: (queue: string) => string;
  onError: (err: unknown) => void;
}

export class Notifier {
  readonly #o: NotifierOptions;
  /** queue -> whether a trailing NOTIFY is owed when its window closes. */
  readonly #windows = new Map<string, { trailing: boolean; timer: NodeJS.Timeout }>();

  constructor(options: NotifierOptions) {
    this.#o = options;
  }

  /** Signals that jobs were committed into `queues`. */
  notify(queues: Iterable<string>): void {
    const now: string[] = [];
    for (const q of new Set(queues)) {
      const w = this.#windows.get(q);
      if (w) w.trailing = true;
      else now.push(...this.lead([q]));
    }
    if (now.length > 0) this.#send(now);
  }

  /**
   * Takes the leading edge for the quiet ones among `queues` before their jobs are written: the
   * caller sends their NOTIFY itself, inside the insert statement, so it leaves with the commit.
   * Queues already inside a window are left alone; call notify() for them once committed (a
   * trailing NOTIFY owed before the commit could arrive before the rows are visible).
   */
  lead(queues: Iterable<string>): string[] {
    const now: string[] = [];
    for (const q of new Set(queues)) {
      if (this.#o.debounceMs === 0) now.push(q);
      else if (!this.#windows.has(q)) {
        now.push(q);
        this.#open(q);
      }
    }
    return now;
  }

  #open(queue: string): void {
    const timer = setTimeout(() => {
      const w = this.#windows.get(queue);
      this.#windows.delete(queue);
      if (w?.trailing) {
        this.#open(queue);
        this.#send([queue]);
      }
    }, this.#o.debounceMs);
    timer.unref();
    this.#windows.set(queue, { trailing: false, timer });
  }

  #send(queues: string[]): void {
    this.#o.send(queues.map(this.#o.channelOf)).catch(this.#o.onError);
  }

  /** Drops pending trailing notifications (polling covers anything they would have woken). */
  stop(): void {
    for (const w of this.#windows.values()) clearTimeout(w.timer);
    this.#windows.clear();
  }
}
