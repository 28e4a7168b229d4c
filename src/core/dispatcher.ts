// The claim loop of one queue. Woken by NOTIFY, in-process enqueues and the poll
// timer; never claims more than its free slots; after a claim that filled every
// free slot it claims again as soon as a slot frees (drain mode).

/** What a claim says about the next one. */
export interface ClaimOutcome {
  /** Jobs claimed and started. */
  got: number;
  /** Claim again at once when it got some but fewer than asked (a fair claim stops at its slices). */
  again?: boolean;
  /** More jobs probably wait (a cap or rate limit bound the claim): claim again as slots free. */
  more?: boolean;
  /** A rate limit held jobs back: claim again after this long (no polling meanwhile). */
  wakeInMs?: number | null;
}

export interface DispatcherDeps {
  queue: string;
  concurrency: number;
  /** Claims up to `limit` jobs and starts them. */
  claimAndStart: (limit: number) => Promise<ClaimOutcome>;
  onError: (err: unknown) => void;
}

const ERROR_BACKOFF_MIN_MS = 50;
const ERROR_BACKOFF_MAX_MS = 2_000;

export class QueueDispatcher {
  readonly #d: DispatcherDeps;
  #inFlight = 0;
  /** Jobs whose handler returned and whose outcome write is still in flight. */
  #writing = 0;
  #claiming = false;
  #wanted = false;
  #lastFilled = false;
  /**
   * The last claim was bound by a cap or rate limit, not by our slots. A cap counts a job's lease
   * until its outcome is written, so a slot frees for the next claim at writeDone, not handlerDone.
   */
  #limited = false;
  #stopped = true;
  #backoff: NodeJS.Timeout | null = null;
  #backoffMs = ERROR_BACKOFF_MIN_MS;
  #soon: NodeJS.Immediate | null = null;
  #timer: NodeJS.Timeout | null = null;
  #timerAt = Number.POSITIVE_INFINITY;

  constructor(deps: DispatcherDeps) {
    this.#d = deps;
  }

  get queue(): string {
    return this.#d.queue;
  }
  get concurrency(): number {
    return this.#d.concurrency;
  }
  get inFlight(): number {
    return this.#inFlight;
  }

  start(): void {
    this.#stopped = false;
    this.wake();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#backoff) clearTimeout(this.#backoff);
    this.#backoff = null;
    if (this.#soon) clearImmediate(this.#soon);
    this.#soon = null;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** Claims again in `ms` (a rate limit's bucket refills, a retry falls due), unless a sooner wake-up is set. */
  wakeIn(ms: number): void {
    if (this.#stopped) return;
    const at = Date.now() + ms;
    if (this.#timer && this.#timerAt <= at) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        this.#timerAt = Number.POSITIVE_INFINITY;
        this.wake();
      },
      Math.max(1, Math.ceil(ms)),
    );
  }

  /** Asks for a claim as soon as possible; coalesces with one in progress. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#claiming) {
      this.#wanted = true;
      return;
    }
    void this.#loop();
  }

  /** A handler slot is taken (called synchronously for each started job). */
  acquired(): void {
    this.#inFlight++;
  }

  /**
   * A handler returned: its slot is free for the next claim while its outcome is written, so
   * claims and completion writes overlap instead of alternating.
   */
  handlerDone(): void {
    this.#inFlight--;
    this.#writing++;
    if (!this.#limited) this.#refill();
  }

  /** The outcome write of a finished handler resolved (accepted, fenced or abandoned). */
  writeDone(): void {
    this.#writing--;
    this.#refill();
  }

  /**
   * Free slots for the next claim. Outcome writes in flight count against a second allowance of
   * `concurrency`, so a slow database throttles claiming instead of letting leases pile up.
   */
  #free(): number {
    const c = this.#d.concurrency;
    return Math.min(c - this.#inFlight, 2 * c - this.#inFlight - this.#writing);
  }

  #refill(): void {
    // Drain mode: the last claim was full, so more jobs are probably waiting. Deferred to
    // the next turn so slots freed by one completion batch are refilled by one claim.
    if (this.#lastFilled && !this.#soon) {
      this.#soon = setImmediate(() => {
        this.#soon = null;
        this.wake();
      });
    }
  }

  async #loop(): Promise<void> {
    this.#claiming = true;
    try {
      do {
        this.#wanted = false;
        const free = this.#free();
        if (free <= 0 || this.#stopped) {
          // Out of slots: the next handlerDone/writeDone refills.
          if (free <= 0) this.#lastFilled = true;
          break;
        }
        const r = await this.#d.claimAndStart(free);
        this.#lastFilled = r.got === free || r.more === true;
        this.#limited = r.more === true && r.got < free;
        if (r.again && r.got > 0 && r.got < free) this.#wanted = true;
        if (r.wakeInMs != null) this.wakeIn(r.wakeInMs);
        this.#backoffMs = ERROR_BACKOFF_MIN_MS;
      } while (this.#wanted && !this.#stopped);
    } catch (err) {
      this.#d.onError(err);
      // Retry on our own with a growing delay (the database may be restarting); the poll
      // timer is the slower safety net.
      if (!this.#stopped && !this.#backoff) {
        this.#backoff = setTimeout(() => {
          this.#backoff = null;
          this.wake();
        }, this.#backoffMs);
        this.#backoffMs = Math.min(ERROR_BACKOFF_MAX_MS, this.#backoffMs * 2);
      }
    } finally {
      this.#claiming = false;
    }
  }

  /** Resolves when no claim is in progress (for shutdown). */
  async idle(): Promise<void> {
    while (this.#claiming) await new Promise((r) => setTimeout(r, 5));
  }
}
