// Waiting without sleeps: poll a condition until a deadline, or wait for an
// event to be signalled. Both fail loudly, naming what they waited for.

export interface WaitForOptions {
  /** Give up after this long. Default 10 000 ms. */
  timeoutMs?: number;
  /** Pause between polls. Default 20 ms. */
  intervalMs?: number;
  /** What is being waited for, used in the timeout error ("job 7 to succeed"). */
  message?: string;
}

export class WaitTimeoutError extends Error {
  readonly code = 'WAIT_TIMEOUT';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WaitTimeoutError';
  }
}

/**
 * Polls `predicate` until it returns a truthy value (which is returned) or the
 * deadline passes. A predicate that throws counts as "not yet", so assertions
 * may be used as predicates; the last error is reported on timeout.
 */
export async function waitFor<T>(predicate: () => T | Promise<T>, options: WaitForOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 20;
  const what = options.message ?? (predicate.toString().replace(/\s+/g, ' ').slice(0, 120) || 'condition');
  const deadline = Date.now() + timeoutMs;
  let lastValue: unknown;
  let lastError: unknown;
  let polls = 0;
  for (;;) {
    polls++;
    try {
      lastValue = await predicate();
      lastError = undefined;
      if (lastValue) return lastValue as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, Math.min(intervalMs, Math.max(0, deadline - Date.now()))));
  }
  const last =
    lastError !== undefined
      ? `last error: ${lastError instanceof Error ? lastError.message : String(lastError)}`
      : `last value: ${describe(lastValue)}`;
  throw new WaitTimeoutError(`timed out after ${timeoutMs} ms (${polls} polls) waiting for ${what}; ${last}`, {
    cause: lastError,
  });
}

function describe(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
  /** True once resolve or reject was called. */
  readonly settled: boolean;
}

/** A promise with its resolve/reject exposed, to hand to an event callback. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  let settled = false;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Unobserved rejections must not crash the worker before a test awaits them.
  promise.catch(() => undefined);
  return {
    promise,
    resolve: (v) => {
      settled = true;
      resolve(v);
    },
    reject: (e) => {
      settled = true;
      reject(e);
    },
    get settled() {
      return settled;
    },
  };
}

/** Resolves like `promise`, or rejects with a WaitTimeoutError naming `what` after `timeoutMs`. */
export function withTimeout<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WaitTimeoutError(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A signal a component under test fires and a test awaits, in order (River's
 * testsignal). Values fired before anyone waits are buffered, never lost.
 */
export class Signal<T = void> {
  private readonly buffered: T[] = [];
  private readonly waiters: Array<(v: T) => void> = [];

  /** Fire the signal; wakes the oldest waiter or buffers the value. */
  readonly emit = (value: T): void => {
    const waiter = this.waiters.shift();
    if (waiter) waiter(value);
    else this.buffered.push(value);
  };

  /** The next value, or a WaitTimeoutError naming `what`. */
  next(options: { timeoutMs?: number; message?: string } = {}): Promise<T> {
    if (this.buffered.length) return Promise.resolve(this.buffered.shift() as T);
    const timeoutMs = options.timeoutMs ?? 10_000;
    let waiter!: (v: T) => void;
    const p = new Promise<T>((resolve) => {
      waiter = resolve;
      this.waiters.push(waiter);
    });
    return withTimeout(p, timeoutMs, options.message ?? 'signal').catch((err: unknown) => {
      const i = this.waiters.indexOf(waiter);
      if (i >= 0) this.waiters.splice(i, 1);
      throw err;
    });
  }

  /** Values fired and not yet consumed. */
  get pending(): number {
    return this.buffered.length;
  }
}

/** Waits for `emitter` to emit `event`, with a deadline; resolves with the event's arguments. */
export function nextEvent(
  emitter: { once(event: string, fn: (...args: any[]) => void): unknown; off(event: string, fn: (...args: any[]) => void): unknown },
  event: string,
  options: { timeoutMs?: number; message?: string } = {},
): Promise<unknown[]> {
  let fn!: (...args: unknown[]) => void;
  const p = new Promise<unknown[]>((resolve) => {
    fn = (...args) => resolve(args);
    emitter.once(event, fn);
  });
  return withTimeout(p, options.timeoutMs ?? 10_000, options.message ?? `event '${event}'`).catch((err: unknown) => {
    emitter.off(event, fn);
    throw err;
  });
}
