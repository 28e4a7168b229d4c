// Wake-up NOTIFYs: one channel per queue, debounced per queue on the leading
// edge. The first enqueue in a quiet window notifies at once (sparse traffic pays
// no added latency); later ones inside the window coalesce into one trailing NOTIFY.
// Every NOTIFY runs after the enqueue's commit, never inside its transaction.

export { cancelChannelFor, channelFor, cronChannelFor } from '../driver/channels.ts';

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
    const qs = new Set(queues);
    for (const q of qs) {
      const w = this.#windows.get(q);
      if (w) w.trailing = true;
    }
    const now = this.takeLeading(qs);
    if (now.length > 0) this.#send(now);
  }

  /**
   * Takes the leading edge for the queues of an enqueue about to be sent: returns those
   * with no open window (opening one for each), whose NOTIFY the caller sends itself, in
   * the insert's round trip. Queues already inside a window are left out: call notify() for them
   * once the insert has committed (a trailing NOTIFY must never leave before that commit).
   */
  takeLeading(queues: Iterable<string>): string[] {
    const lead: string[] = [];
    for (const q of new Set(queues)) {
      if (this.#o.debounceMs === 0) {
        lead.push(q);
      } else if (!this.#windows.has(q)) {
        lead.push(q);
        this.#open(q);
      }
    }
    return lead;
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
