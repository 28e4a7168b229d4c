// IANA time zones over wall-clock time: offsets, local labels, and the map from a local
// wall-clock label to the instant it names (earliest instance when repeated, the end of
// the gap when skipped). Built on Intl only; no zone data of our own.

import { BatonError } from '../../types/errors.ts';

const formatters = new Map<string, Intl.DateTimeFormat>();
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** A fixed offset ("+02:00", "UTC+2", "GMT-5") is not an IANA id, even where Intl accepts it. */
const FIXED_OFFSET = /^(?:[+-]|(?:UTC|GMT|UT)\s*[+-])/i;

/**
 * Validates an IANA zone id and returns its canonical spelling.
 * @throws BatonError INVALID_TIMEZONE for a fixed offset or a zone Intl does not know.
 */
export function canonicalZone(zone: string): string {
  if (typeof zone !== 'string' || zone.length === 0 || zone.length > 64 || FIXED_OFFSET.test(zone.trim())) {
    throw new BatonError(
      'INVALID_TIMEZONE',
      `invalid time zone ${JSON.stringify(zone)}: use an IANA zone id such as "Europe/London" (fixed offsets are not accepted)`,
    );
  }
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    throw new BatonError('INVALID_TIMEZONE', `unknown time zone ${JSON.stringify(zone)}: use an IANA zone id such as "Europe/London"`);
  }
}

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    });
    formatters.set(zone, f);
  }
  return f;
}

const HOUR = 60 * MINUTE;
/** Per zone: hour bucket -> its offset when constant through the hour, null when a transition falls inside. */
const hourOffsets = new Map<string, Map<number, number | null>>();
const HOUR_OFFSETS_MAX = 100_000;

/**
 * The wall-clock time at `instant` in `zone`, as "naive" epoch ms: the UTC instant whose
 * UTC fields equal the local fields (milliseconds kept).
 */
export function localNaive(zone: string, instant: number): number {
  return instant + offsetAt(zone, instant);
}

/**
 * The zone's UTC offset (ms) at `instant`. Intl is slow (microseconds a call) and a tick asks
 * for the same hours of the same zones for every due schedule, so each hour is read once: its
 * offset at the start and just before the end, the same unless a transition falls inside (no
 * zone changes offset and back within an hour), in which case Intl answers for the instant.
 */
export function offsetAt(zone: string, instant: number): number {
  const bucket = Math.floor(instant / HOUR);
  let byHour = hourOffsets.get(zone);
  if (!byHour) {
    byHour = new Map();
    hourOffsets.set(zone, byHour);
  }
  let off = byHour.get(bucket);
  if (off === undefined) {
    const start = intlOffset(zone, bucket * HOUR);
    off = start === intlOffset(zone, (bucket + 1) * HOUR - 1000) ? start : null;
    if (byHour.size >= HOUR_OFFSETS_MAX) byHour.clear();
    byHour.set(bucket, off);
  }
  return off ?? intlOffset(zone, instant);
}

/** The offset as Intl reports it (whole seconds). */
function intlOffset(zone: string, instant: number): number {
  return intlNaive(zone, instant) - Math.floor(instant / 1000) * 1000;
}

/** Wall-clock time at `instant` (floored to the second) as naive epoch ms, from Intl. */
function intlNaive(zone: string, instant: number): number {
  const whole = Math.floor(instant / 1000) * 1000;
  const p: Record<string, string> = {};
  for (const part of formatter(zone).formatToParts(new Date(whole))) p[part.type] = part.value;
  let year = Number(p.year);
  if (p.era === 'BC' || p.era === 'B') year = 1 - year;
  const d = new Date(0);
  d.setUTCFullYear(year, Number(p.month) - 1, Number(p.day));
  d.setUTCHours(Number(p.hour), Number(p.minute), Number(p.second), 0);
  return d.getTime();
}

/** The first instant in (lo, hi] whose offset differs from the offset at lo (whole seconds). */
function transitionAfter(zone: string, lo: number, hi: number): number {
  const before = offsetAt(zone, lo);
  let a = Math.floor(lo / 1000);
  let b = Math.ceil(hi / 1000);
  while (b - a > 1) {
    const m = Math.floor((a + b) / 2);
    if (offsetAt(zone, m * 1000) === before) a = m;
    else b = m;
  }
  return b * 1000;
}

/**
 * The first instant in (lo, hi] whose offset differs from the offset at lo, or null when the
 * offset holds throughout. Reads a day at a time: like instantOf, it takes no zone to change
 * offset and back within a day.
 */
export function nextTransition(zone: string, lo: number, hi: number): number | null {
  const off = offsetAt(zone, lo);
  for (let s = lo; s < hi; s += DAY) {
    const e = Math.min(hi, s + DAY);
    if (offsetAt(zone, e) !== off) return transitionAfter(zone, s, e);
  }
  return null;
}

/**
 * The instant a local wall-clock label names in `zone`: its earliest instance when the label
 * happens twice (fall back), and the first instant after the gap when it never happens
 * (spring forward). Non-decreasing in `naive`.
 */
export function instantOf(zone: string, naive: number): number {
  const before = offsetAt(zone, naive - DAY);
  const after = offsetAt(zone, naive + DAY);
  // Transitions are months apart: the same offset a day either side means none is near.
  if (before === after) return naive - before;
  const offsets = new Set([before, after]);
  let best: number | null = null;
  for (const off of offsets) {
    const t = naive - off;
    if (offsetAt(zone, t) === off && (best === null || t < best)) best = t;
  }
  if (best !== null) return best;
  // In a gap: the label lies between the local times just before and just after a transition.
  const [lo, hi] = [Math.min(...offsets), Math.max(...offsets)];
  return transitionAfter(zone, naive - hi, naive - lo);
}

/** The end (exclusive, as a local label) of a repeated stretch that `first` (its first-pass instance) lies in. */
export function repeatEnd(zone: string, first: number, later: number): number {
  const t = transitionAfter(zone, first, later);
  return localNaive(zone, t - 1000) + 1000;
}

/** ISO 8601 local time with its offset, e.g. 2026-03-29T02:00:00+01:00. */
export function formatLocal(zone: string, instant: number): string {
  const naive = localNaive(zone, instant);
  const off = Math.round((naive - instant) / MINUTE);
  const sign = off < 0 ? '-' : '+';
  const abs = Math.abs(off);
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(abs % 60).padStart(2, '0');
  const base = new Date(naive).toISOString();
  const frac = naive % 1000 === 0 ? base.slice(0, 19) : base.slice(0, 23);
  return `${frac}${sign}${hh}:${mm}`;
}
