// Cron expressions over local wall-clock time in an IANA zone. croner parses the
// expression and matches its fields, evaluated in UTC over "naive" wall-clock time (UTC
// has no DST, so it only ever sees the calendar); zone.ts maps labels and instants. A fixed
// hour fires each matching label once; a wildcard hour (`*`, `*/n`, `@hourly`) fires at every
// instant whose wall-clock time matches, as Vixie cron does. Fire times strictly increase.

import { Cron } from 'croner';
import { BatonError } from '../../types/errors.ts';
import { canonicalZone, formatLocal, instantOf, localNaive, nextTransition, offsetAt, repeatEnd } from './zone.ts';

export const CRON_MAX_CHARS = 200;
/** The macros Baton documents (croner knows these and no others we accept). */
const MACROS = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);
/** A label search that runs longer than this many matches is a bug or a pathological expression. */
const MAX_STEPS = 10_000;

export interface CronSchedule {
  readonly expression: string;
  /** Canonical IANA zone id. */
  readonly timezone: string;
  /**
   * True when the hour field is a wildcard (starts with `*` or `?`, or `@hourly`): the schedule
   * follows the wall clock through DST changes (both passes of a repeated hour, nothing for a
   * skipped one). False: each matching wall-clock label fires once (docs/cron.md).
   */
  readonly wildcardHour: boolean;
  /** The first fire instant strictly after `after`, or null when the expression never fires again. */
  next(after: Date): Date | null;
}

/** One occurrence a schedule would fire, as cron.preview lists them. */
export interface FireInstant {
  /** ISO 8601 in UTC. */
  utc: string;
  /** ISO 8601 wall-clock time in the schedule's zone, with its offset. */
  local: string;
}

function invalid(expression: string, why: string): BatonError {
  return new BatonError('INVALID_CRON_EXPRESSION', `invalid cron expression ${JSON.stringify(expression)}: ${why}`);
}

/**
 * Parses a five-field (or six, with leading seconds) expression or a macro, in an IANA zone.
 * @throws BatonError INVALID_CRON_EXPRESSION or INVALID_TIMEZONE, with a readable message.
 */
export function parseCron(expression: string, timezone: string): CronSchedule {
  const zone = canonicalZone(timezone);
  if (typeof expression !== 'string' || expression.trim() === '' || expression.length > CRON_MAX_CHARS) {
    throw invalid(String(expression), `must be 1-${CRON_MAX_CHARS} characters`);
  }
  const text = expression.trim().replace(/\s+/g, ' ');
  let wildcardHour: boolean;
  if (text.startsWith('@')) {
    if (!MACROS.has(text.toLowerCase())) throw invalid(expression, `unknown macro; use one of ${[...MACROS].join(' ')}`);
    wildcardHour = text.toLowerCase() === '@hourly';
  } else {
    const parts = text.split(' ');
    const fields = parts.length;
    // Vixie cron's test (HR_STAR): the field's first character. croner reads `?` as `*`.
    wildcardHour = /^[*?]/.test(parts[fields === 6 ? 2 : 1] ?? '');
    if (fields !== 5 && fields !== 6) {
      throw invalid(
        expression,
        `has ${fields} fields; expected 5 (minute hour day-of-month month day-of-week) or 6 (with leading seconds)`,
      );
    }
  }
  let cron: Cron;
  try {
    // OR of day-of-month and day-of-week when both are restricted, as in Vixie cron. A zero
    // utcOffset (not timezone: 'UTC') keeps croner off Intl: naive time needs no zone.
    cron = new Cron(text.startsWith('@') ? text.toLowerCase() : text, {
      utcOffset: 0,
      paused: true,
      mode: '5-or-6-parts',
      domAndDow: false,
    });
  } catch (err) {
    throw invalid(expression, (err as Error).message.replace(/^CronPattern: /, ''));
  }
  return {
    expression: text,
    timezone: zone,
    wildcardHour,
    next(after: Date): Date | null {
      const a = after.getTime();
      if (wildcardHour) return nextByWallClock(cron, zone, a, expression);
      // Labels at or before a's own label have all been reached by a (see docs/cron.md).
      let cursor = localNaive(zone, a);
      for (let i = 0; i < MAX_STEPS; i++) {
        const label = cron.nextRun(new Date(cursor));
        if (!label) return null;
        const t = instantOf(zone, label.getTime());
        if (t > a) return new Date(t);
        // The label repeats (fall back) and its first instance has passed: jump past the repeat.
        cursor = Math.max(label.getTime(), repeatEnd(zone, t, a) - 1);
      }
      throw invalid(expression, 'no next fire time found within the search limit');
    },
  };
}

/**
 * The first instant after `after` whose wall-clock time in `zone` matches, walking the stretches
 * of constant offset: within one, labels and instants move together, so croner's next label is
 * the answer unless an offset change comes first, and then the search starts again from that
 * change under the new offset (a repeated hour's labels come round again; a skipped one's never
 * happen).
 */
function nextByWallClock(cron: Cron, zone: string, after: number, expression: string): Date | null {
  // Instants from `from` on (inclusive) are still candidates.
  let from = after + 1;
  for (let i = 0; i < MAX_STEPS; i++) {
    const off = offsetAt(zone, from);
    // nextRun is strictly after its argument, in whole seconds: the first label >= from's own.
    const label = cron.nextRun(new Date(from + off - 1));
    if (!label) return null;
    const t = label.getTime() - off;
    const change = nextTransition(zone, from, t);
    if (change === null) return new Date(t);
    from = change;
  }
  throw invalid(expression, 'no next fire time found within the search limit');
}

/** The next `count` fire instants strictly after `from`, in UTC and in local time. */
export function previewCron(schedule: CronSchedule, count: number, from: Date): FireInstant[] {
  const out: FireInstant[] = [];
  let at = from;
  for (let i = 0; i < count; i++) {
    const next = schedule.next(at);
    if (!next) break;
    out.push({ utc: next.toISOString(), local: formatLocal(schedule.timezone, next.getTime()) });
    at = next;
  }
  return out;
}
