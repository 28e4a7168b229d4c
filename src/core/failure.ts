// What a thrown failure is: terminal or retryable (isTerminal), and its description in the
// error history (describeError).
// The backoff itself (full jitter, base and cap) is computed in SQL (queries/job-lease.ts failMany).

import { TerminalError } from '../types/errors.ts';

/**
 * True when `err` or anything in its `cause` chain (or an AggregateError's errors) is a
 * TerminalError. Cycle-safe and depth-bounded.
 */
export function isTerminal(err: unknown): boolean {
  const seen = new Set<unknown>();
  const stack: unknown[] = [err];
  while (stack.length > 0 && seen.size < 1_000) {
    const e = stack.pop();
    if (e === null || e === undefined || seen.has(e)) continue;
    seen.add(e);
    // A getter or proxy trap of the thrown value may throw: what cannot be read is not terminal.
    try {
      if (e instanceof TerminalError) return true;
      // Errors from another realm or a bundled copy of Baton: match by name.
      if (typeof e === 'object' && (e as { name?: unknown }).name === 'TerminalError') return true;
      if (typeof e === 'object') {
        const cause = (e as { cause?: unknown }).cause;
        if (cause !== undefined) stack.push(cause);
        if (e instanceof AggregateError) stack.push(...e.errors);
      }
    } catch {}
  }
  return false;
}

const MESSAGE_LIMIT = 2_000;
const STACK_LIMIT = 8_000;

/**
 * A JSON-safe description of what was thrown, bounded in size, NUL-free (jsonb rejects \u0000).
 * Never throws: a value whose getters, toJSON and toString all throw is still described.
 */
export function describeError(err: unknown): { name: string; message: string; stack?: string } {
  try {
    return describe(err);
  } catch {
    return { name: 'NonError', message: '[a thrown value that could not be read]' };
  }
}

function describe(err: unknown): { name: string; message: string; stack?: string } {
  const clean = (s: string, limit: number) => s.replaceAll('\u0000', '\uFFFD').slice(0, limit);
  if (err instanceof Error) {
    const out: { name: string; message: string; stack?: string } = {
      name: clean(String(err.name || 'Error'), 200),
      message: clean(String(err.message), MESSAGE_LIMIT),
    };
    if (typeof err.stack === 'string') out.stack = clean(err.stack, STACK_LIMIT);
    return out;
  }
  let message: string;
  try {
    message = typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err));
  } catch {
    message = String(err);
  }
  return { name: 'NonError', message: clean(message, MESSAGE_LIMIT) };
}
