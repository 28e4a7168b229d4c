// Built-in demo handlers, one per path through the state machine:
// noop succeeds, sleep runs long (heartbeats keep its lease), boom retries until
// it dead-letters, poison dead-letters at once. They let a newcomer watch jobs move.

import { setTimeout as delay } from 'node:timers/promises';
import { TerminalError } from '../core/errors.ts';
import type { Handler, HandlerMap } from '../core/handler.ts';

export const SLEEP_MS_DEFAULT = 10_000;
const SLEEP_MS_MAX = 3_600_000;

/** Succeeds at once. */
export const noop: Handler = () => ({ ok: true });

/**
 * Sleeps payload.ms (default 10 s, max 1 h), long enough to span several
 * heartbeats. Stops as soon as ctx.signal aborts (lease lost / drain deadline).
 */
export const sleep: Handler<{ ms?: unknown } | null> = async (ctx) => {
  const raw = ctx.payload?.ms ?? SLEEP_MS_DEFAULT;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0 || raw > SLEEP_MS_MAX) {
    throw new TerminalError(`sleep: payload.ms must be an integer 0..${SLEEP_MS_MAX}, got ${JSON.stringify(raw)}`);
  }
  await delay(raw, undefined, { signal: ctx.signal });
  return { sleptMs: raw };
};

/** Always fails with a transient error: retried with backoff until the budget is spent, then dead-lettered. */
export const boom: Handler = (ctx) => {
  throw new Error(`boom: transient failure on attempt ${ctx.job.attempt} of ${ctx.job.maxAttempts}`);
};

/** Terminal on its first attempt: dead-lettered at once, no retries. */
export const poison: Handler = (ctx) => {
  if (ctx.job.attempt <= 1) {
    throw new TerminalError('poison: this payload can never succeed (TerminalError, no retry)');
  }
  return { ok: true, attempt: ctx.job.attempt };
};

export const demoHandlers: HandlerMap = Object.freeze({ noop, sleep, boom, poison });
