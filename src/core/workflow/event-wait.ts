// What an event wait waits for (ctx.waitForEvent): one or several names, any of which ends it,
// and a match, a JSON object the payload must contain (jsonb @>, evaluated in SQL where the
// events are). Both are checked here before anything is written, and stored with the wait's
// step when it is armed, so a later execution resumes the wait as first armed.

import { TerminalError } from '../../types/errors.ts';
import type { WaitForEventOptions } from '../../types/workflow.ts';
import { DELAY_MS_MAX } from '../job-spec.ts';
import { serialise } from './outcome.ts';

/** Most names one wait may take. */
export const WAIT_NAMES_MAX = 32;

/** An event wait as the store arms it: its names, its match as JSON text (null: any payload), its timeout. */
export interface EventWait {
  names: string[];
  match: string | null;
  timeoutMs: number | null;
}

/** Checks ctx.waitForEvent's arguments; throws TerminalError (a programming error, never retried) naming what is wrong. */
export function eventWait(key: string, eventName: string | string[], opts: WaitForEventOptions = {}): EventWait {
  const { timeoutMs, match } = opts ?? {};
  if (timeoutMs !== undefined && (!Number.isFinite(timeoutMs) || timeoutMs < 0 || timeoutMs > DELAY_MS_MAX)) {
    throw new TerminalError(`waitForEvent "${key}": timeoutMs must be a number from 0 to ${DELAY_MS_MAX}`);
  }
  const names = Array.isArray(eventName) ? eventName : [eventName];
  if (names.length === 0 || names.length > WAIT_NAMES_MAX || names.some((n) => typeof n !== 'string' || n.length === 0)) {
    throw new TerminalError(`waitForEvent "${key}": the event name must be a non-empty string, or an array of 1-${WAIT_NAMES_MAX} of them`);
  }
  if (match !== undefined && (match === null || typeof match !== 'object' || Array.isArray(match))) {
    throw new TerminalError(`waitForEvent "${key}": match must be a JSON object the payload contains`);
  }
  return {
    names: [...new Set(names)],
    match: match === undefined ? null : serialise(match, `the match of waitForEvent "${key}"`),
    timeoutMs: timeoutMs === undefined ? null : Math.ceil(timeoutMs),
  };
}
