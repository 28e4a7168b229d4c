// The clock seam: the engine reads local time only through this, for what it measures
// itself (how long a lease has gone unproven, how late a claim's answer came). Times the
// system agrees on (run_at, lease expiry, backoff) are the database's, never this.

/** Monotonic milliseconds, as performance.now(). Tests pass a clock they can move. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => performance.now() };
