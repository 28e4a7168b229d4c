// Built-in demo handlers, one per path through the state machine:
// noop succeeds, sleep runs long (heartbeats keep its lease), boom retries until
// it dead-letters, poison dead-letters at once. They let a newcomer watch jobs move.
// The place-order workflow shows a run stepping, waiting for an event and resuming.

import { setTimeout as delay } from 'node:timers/promises';
import type { Handler, HandlerMap } from '../core/handler.ts';
import { TerminalError } from '../types/errors.ts';
import type { WorkflowFn } from '../types/workflow.ts';

export const SLEEP_MS_DEFAULT = 10_000;
const SLEEP_MS_MAX = 3_600_000;

/** Succeeds at once. */
export const noop: Handler = () => ({ ok: true });

/**
 * Sleeps payload.ms (default 10 s, max 1 h), long enough to span several
 * heartbeats, reporting its progress. Stops as soon as ctx.signal aborts (lease lost / drain deadline).
 */
export const sleep: Handler<{ ms?: unknown } | null> = async (ctx) => {
  const raw = ctx.payload?.ms ?? SLEEP_MS_DEFAULT;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0 || raw > SLEEP_MS_MAX) {
    throw new TerminalError(`sleep: payload.ms must be an integer 0..${SLEEP_MS_MAX}, got ${JSON.stringify(raw)}`);
  }
  // In tenths, reporting each as progress, so the console shows the job's bar filling.
  for (let tenth = 1; tenth <= 10; tenth++) {
    await delay(raw / 10, undefined, { signal: ctx.signal });
    ctx.progress(tenth * 10);
  }
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

/** How long place-order waits for its `shipped` event by default (payload.shipWithinMs overrides). */
export const SHIP_WITHIN_MS_DEFAULT = 10 * 60_000;

/**
 * The demo workflow: reserve stock, charge the card, wait for the event `shipped`
 * (POST /api/workflows/runs/:id/events/shipped) with a timeout, then notify. Input:
 * { sku?, amount?, shipWithinMs? }. Not shipped in time: the run still finishes, saying so.
 */
export const placeOrder: WorkflowFn<{ sku?: unknown; amount?: unknown; shipWithinMs?: unknown } | null> = async (ctx) => {
  const input = ctx.input ?? {};
  const sku = typeof input.sku === 'string' ? input.sku : 'demo-sku';
  const amount = typeof input.amount === 'number' ? input.amount : 100;
  const wait = input.shipWithinMs;
  const shipWithinMs =
    typeof wait === 'number' && Number.isInteger(wait) && wait >= 0 && wait <= SLEEP_MS_MAX ? wait : SHIP_WITHIN_MS_DEFAULT;
  const reservation = await ctx.step('reserve-stock', (s) => ({ sku, reservationId: `res-${s.idempotencyKey}` }));
  const charge = await ctx.step('charge-card', (s) => ({ amount, chargeId: `ch-${s.idempotencyKey}` }));
  const shipped = await ctx.waitForEvent('shipped', 'shipped', { timeoutMs: shipWithinMs });
  const notice = await ctx.step('notify', () => ({ sent: true, shipped: shipped !== null }));
  return { reservation, charge, shipped: shipped?.payload ?? null, notice };
};

/** The demo workflows, by name. */
export const demoWorkflows: Readonly<Record<string, WorkflowFn<never>>> = Object.freeze({ 'place-order': placeOrder });
