// Cron expressions and DST, without a database: every row of the expression and DST rules.

import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';
import { parseCron, previewCron } from '../../src/core/cron/expression.ts';
import { canonicalZone } from '../../src/core/cron/zone.ts';
import { isBatonError } from '../../src/types/errors.ts';

/** The fire instants (UTC ISO) in [from, to). */
function between(expr: string, zone: string, from: string, to: string): string[] {
  const s = parseCron(expr, zone);
  const out: string[] = [];
  let at = new Date(Date.parse(from) - 1);
  for (;;) {
    const n = s.next(at);
    if (!n || n.getTime() >= Date.parse(to)) return out;
    out.push(n.toISOString());
    at = n;
  }
}
const local = (expr: string, zone: string, from: string, count: number) =>
  previewCron(parseCron(expr, zone), count, new Date(from)).map((f) => f.local);
function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (err) {
    return isBatonError(err) ? err.code : 'not a BatonError';
  }
  return undefined;
}
function strictlyIncreasing(xs: string[]): boolean {
  return xs.every((x, i) => i === 0 || Date.parse(x) > Date.parse(xs[i - 1] as string));
}

describe('expressions', () => {
  it('reads ranges, steps, lists and names', () => {
    expect(local('*/20 9-10 * * MON-FRI', 'UTC', '2026-01-02T00:00:00Z', 7)).toEqual([
      '2026-01-02T09:00:00+00:00',
      '2026-01-02T09:20:00+00:00',
      '2026-01-02T09:40:00+00:00',
      '2026-01-02T10:00:00+00:00',
      '2026-01-02T10:20:00+00:00',
      '2026-01-02T10:40:00+00:00',
      // Saturday and Sunday skipped.
      '2026-01-05T09:00:00+00:00',
    ]);
    expect(local('0 12 1 JAN,jul *', 'UTC', '2026-01-01T12:00:00Z', 3)).toEqual([
      '2026-07-01T12:00:00+00:00',
      '2027-01-01T12:00:00+00:00',
      '2027-07-01T12:00:00+00:00',
    ]);
    expect(local('5,10 0 1-10/3 * *', 'UTC', '2026-03-01T00:06:00Z', 4)).toEqual([
      '2026-03-01T00:10:00+00:00',
      '2026-03-04T00:05:00+00:00',
      '2026-03-04T00:10:00+00:00',
      '2026-03-07T00:05:00+00:00',
    ]);
  });

  it('treats day-of-week 0 and 7 as Sunday', () => {
    expect(local('0 0 * * 0', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(local('0 0 * * 7', 'UTC', '2026-01-01T00:00:00Z', 1));
    expect(local('0 0 * * SUN', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-04T00:00:00+00:00']);
  });

  it('fires on either day when both day-of-month and day-of-week are restricted', () => {
    // January 2026: the 13th is a Tuesday; the Fridays are the 2nd, 9th, 16th, 23rd and 30th.
    expect(between('0 0 13 * FRI', 'UTC', '2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z')).toEqual([
      '2026-01-02T00:00:00.000Z',
      '2026-01-09T00:00:00.000Z',
      '2026-01-13T00:00:00.000Z',
      '2026-01-16T00:00:00.000Z',
      '2026-01-23T00:00:00.000Z',
      '2026-01-30T00:00:00.000Z',
    ]);
  });

  it('knows every macro', () => {
    const from = '2026-01-01T00:30:00Z';
    expect(local('@yearly', 'UTC', from, 1)).toEqual(['2027-01-01T00:00:00+00:00']);
    expect(local('@annually', 'UTC', from, 1)).toEqual(['2027-01-01T00:00:00+00:00']);
    expect(local('@monthly', 'UTC', from, 1)).toEqual(['2026-02-01T00:00:00+00:00']);
    expect(local('@weekly', 'UTC', from, 1)).toEqual(['2026-01-04T00:00:00+00:00']);
    expect(local('@daily', 'UTC', from, 1)).toEqual(['2026-01-02T00:00:00+00:00']);
    expect(local('@midnight', 'UTC', from, 1)).toEqual(['2026-01-02T00:00:00+00:00']);
    expect(local('@hourly', 'UTC', from, 1)).toEqual(['2026-01-01T01:00:00+00:00']);
    expect(local('@DAILY', 'Europe/London', '2026-07-01T12:00:00Z', 1)).toEqual(['2026-07-02T00:00:00+01:00']);
  });

  it('takes an optional leading seconds field', () => {
    expect(local('*/15 * * * * *', 'UTC', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-01T00:00:15+00:00',
      '2026-01-01T00:00:30+00:00',
      '2026-01-01T00:00:45+00:00',
    ]);
  });

  it('refuses bad expressions with a readable INVALID_CRON_EXPRESSION', () => {
    for (const bad of ['', '* * * *', '* * * * * * *', '61 * * * *', '0 25 * * *', '0 0 * * MOO', '@fortnightly', 'x'.repeat(300)]) {
      expect(
        codeOf(() => parseCron(bad, 'UTC')),
        bad,
      ).toBe('INVALID_CRON_EXPRESSION');
    }
  });

  it('answers null for an expression that never fires', () => {
    expect(parseCron('0 0 30 2 *', 'UTC').next(new Date('2026-01-01T00:00:00Z'))).toBeNull();
  });
});

describe('zones', () => {
  it('accepts IANA ids only: a fixed offset or an unknown zone is INVALID_TIMEZONE', () => {
    for (const bad of ['+02:00', '-0500', 'UTC+2', 'GMT-5', 'Mars/Olympus', '', 'Europe/London/x']) {
      expect(
        codeOf(() => parseCron('0 0 * * *', bad)),
        bad,
      ).toBe('INVALID_TIMEZONE');
    }
    expect(canonicalZone('Europe/London')).toBe('Europe/London');
    expect(canonicalZone('UTC')).toBe('UTC');
    expect(codeOf(() => parseCron('0 0 * * *', 'Etc/GMT+2'))).toBeUndefined();
  });
});

describe('DST', () => {
  describe('fixed hour, spring forward: a skipped time fires once, just past the gap', () => {
    it('Europe/London (01:00 -> 02:00)', () => {
      expect(local('30 1 * * *', 'Europe/London', '2026-03-28T12:00:00Z', 3)).toEqual([
        '2026-03-29T02:00:00+01:00',
        '2026-03-30T01:30:00+01:00',
        '2026-03-31T01:30:00+01:00',
      ]);
    });
    it('America/New_York (02:00 -> 03:00)', () => {
      expect(local('30 2 * * *', 'America/New_York', '2026-03-07T12:00:00Z', 2)).toEqual([
        '2026-03-08T03:00:00-04:00',
        '2026-03-09T02:30:00-04:00',
      ]);
    });
    it('Australia/Sydney, southern hemisphere (October, 02:00 -> 03:00)', () => {
      expect(local('30 2 * * *', 'Australia/Sydney', '2026-10-03T00:00:00Z', 2)).toEqual([
        '2026-10-04T03:00:00+11:00',
        '2026-10-05T02:30:00+11:00',
      ]);
    });
    it('Australia/Lord_Howe, a 30-minute shift (02:00 -> 02:30): several skipped times fire once', () => {
      expect(local('0,15,30,45 2 * * *', 'Australia/Lord_Howe', '2026-10-03T00:00:00Z', 4)).toEqual([
        '2026-10-04T02:30:00+11:00',
        '2026-10-04T02:45:00+11:00',
        '2026-10-05T02:00:00+11:00',
        '2026-10-05T02:15:00+11:00',
      ]);
    });
    it('a sub-hourly schedule with a fixed hour fires its skipped labels once, just past the gap (London)', () => {
      expect(local('*/30 1,2 * * *', 'Europe/London', '2026-03-29T00:00:00Z', 4)).toEqual([
        // 01:00 and 01:30 never happen: both fire once, at 02:00.
        '2026-03-29T02:00:00+01:00',
        '2026-03-29T02:30:00+01:00',
        '2026-03-30T01:00:00+01:00',
        '2026-03-30T01:30:00+01:00',
      ]);
    });
  });

  describe('fixed hour, fall back: a repeated time fires once, at its first instance', () => {
    it('Europe/London (02:00 -> 01:00)', () => {
      expect(local('30 1 * * *', 'Europe/London', '2026-10-24T12:00:00Z', 2)).toEqual([
        '2026-10-25T01:30:00+01:00',
        '2026-10-26T01:30:00+00:00',
      ]);
    });
    it('America/New_York (02:00 -> 01:00)', () => {
      expect(local('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 2)).toEqual([
        '2026-11-01T01:30:00-04:00',
        '2026-11-02T01:30:00-05:00',
      ]);
    });
    it('Australia/Sydney, southern hemisphere (April, 03:00 -> 02:00)', () => {
      expect(local('30 2 * * *', 'Australia/Sydney', '2026-04-04T00:00:00Z', 2)).toEqual([
        '2026-04-05T02:30:00+11:00',
        '2026-04-06T02:30:00+10:00',
      ]);
    });
    it('Australia/Lord_Howe, a 30-minute shift (02:00 -> 01:30)', () => {
      expect(local('0,15,30,45 1 * * *', 'Australia/Lord_Howe', '2026-04-04T00:00:00Z', 5)).toEqual([
        '2026-04-05T01:00:00+11:00',
        '2026-04-05T01:15:00+11:00',
        '2026-04-05T01:30:00+11:00',
        '2026-04-05T01:45:00+11:00',
        '2026-04-06T01:00:00+10:30',
      ]);
    });
  });

  it('next() from inside the repeated hour does not fire a fixed-hour label again', () => {
    const s = parseCron('*/15 1 * * *', 'Europe/London');
    // 01:20 GMT, the second pass: 01:30 and 01:45 already fired in the first (BST) pass.
    expect(s.next(new Date('2026-10-25T01:20:00Z'))?.toISOString()).toBe('2026-10-26T01:00:00.000Z');
  });

  it('tells a wildcard hour from a fixed one as Vixie cron does: by the hour field’s first character', () => {
    for (const expr of ['0 * * * *', '*/20 * * * *', '0 */2 * * *', '15 ? * * *', '0 0 * * * *', '@hourly', '@HOURLY']) {
      expect(parseCron(expr, 'UTC').wildcardHour, expr).toBe(true);
    }
    for (const expr of [
      '30 1 * * *',
      '* 1 * * *',
      '*/15 1,2 * * *',
      '0 0-23 * * *',
      '0 8-18/2 * * *',
      '* * 1 * * *',
      '@daily',
      '@weekly',
    ]) {
      expect(parseCron(expr, 'UTC').wildcardHour, expr).toBe(false);
    }
  });

  describe('wildcard hour: fires whenever the wall clock matches, both passes of a repeated hour, once per elapsed hour over a skipped one', () => {
    const day = (expr: string, zone: string, from: string, to: string) => between(expr, zone, from, to);
    const gaps = (fires: string[]) => fires.slice(1).map((f, i) => (Date.parse(f) - Date.parse(fires[i] as string)) / 60_000);

    it('America/New_York: 25 hourly fires on the 25-hour fall-back day, 01:00 EDT and 01:00 EST both', () => {
      // 2026-11-01 00:00 EDT is 04:00Z; 2026-11-02 00:00 EST is 05:00Z.
      const fall = day('0 * * * *', 'America/New_York', '2026-11-01T04:00:00Z', '2026-11-02T05:00:00Z');
      expect(fall).toHaveLength(25);
      expect(fall).toContain('2026-11-01T05:00:00.000Z');
      expect(fall).toContain('2026-11-01T06:00:00.000Z');
      expect(new Set(gaps(fall))).toEqual(new Set([60]));
      expect(local('0 * * * *', 'America/New_York', '2026-11-01T04:30:00Z', 3)).toEqual([
        '2026-11-01T01:00:00-04:00',
        '2026-11-01T01:00:00-05:00',
        '2026-11-01T02:00:00-05:00',
      ]);
    });
    it('America/New_York: every 20 minutes through both transitions, no 80-minute hole', () => {
      const fall = day('*/20 * * * *', 'America/New_York', '2026-11-01T04:00:00Z', '2026-11-02T05:00:00Z');
      expect(fall).toHaveLength(75);
      expect(new Set(gaps(fall))).toEqual(new Set([20]));
      const spring = day('*/20 * * * *', 'America/New_York', '2026-03-08T05:00:00Z', '2026-03-09T04:00:00Z');
      expect(spring).toHaveLength(69);
      expect(new Set(gaps(spring))).toEqual(new Set([20]));
    });
    it('America/New_York: once per elapsed hour on the 23-hour spring day; 02:30 is not shifted to 03:00', () => {
      const spring = day('30 * * * *', 'America/New_York', '2026-03-08T05:00:00Z', '2026-03-09T04:00:00Z');
      expect(spring).toHaveLength(23);
      expect(new Set(gaps(spring))).toEqual(new Set([60]));
      expect(local('30 * * * *', 'America/New_York', '2026-03-08T06:00:00Z', 2)).toEqual([
        '2026-03-08T01:30:00-05:00',
        '2026-03-08T03:30:00-04:00',
      ]);
      // A step over the hours keeps its wall-clock hours: 02:00 never happens, so 00:00 then 04:00.
      expect(local('0 */2 * * *', 'America/New_York', '2026-03-08T04:30:00Z', 2)).toEqual([
        '2026-03-08T00:00:00-05:00',
        '2026-03-08T04:00:00-04:00',
      ]);
    });
    it('Europe/London: 25 hourly fires on the fall-back day, 23 on the spring day', () => {
      expect(day('0 * * * *', 'Europe/London', '2026-10-24T23:00:00Z', '2026-10-26T00:00:00Z')).toHaveLength(25);
      expect(day('0 * * * *', 'Europe/London', '2026-03-29T00:00:00Z', '2026-03-29T23:00:00Z')).toHaveLength(23);
      expect(local('*/30 * * * *', 'Europe/London', '2026-10-25T00:15:00Z', 4)).toEqual([
        '2026-10-25T01:30:00+01:00',
        '2026-10-25T01:00:00+00:00',
        '2026-10-25T01:30:00+00:00',
        '2026-10-25T02:00:00+00:00',
      ]);
    });
    it('Australia/Lord_Howe, a 30-minute shift: only the labels in the repeated or skipped half hour change', () => {
      // Fall back, 2026-04-05 02:00 +11:00 -> 01:30 +10:30: 01:30-01:59 happen twice, 01:00 once.
      // The day runs from 2026-04-04T13:00Z to 2026-04-05T13:30Z (24.5 hours).
      expect(day('0 * * * *', 'Australia/Lord_Howe', '2026-04-04T13:00:00Z', '2026-04-05T13:30:00Z')).toHaveLength(24);
      expect(day('30 * * * *', 'Australia/Lord_Howe', '2026-04-04T13:00:00Z', '2026-04-05T13:30:00Z')).toHaveLength(25);
      const quarter = day('*/15 * * * *', 'Australia/Lord_Howe', '2026-04-04T13:00:00Z', '2026-04-05T13:30:00Z');
      expect(quarter).toHaveLength(98);
      expect(new Set(gaps(quarter))).toEqual(new Set([15]));
      // Spring forward, 2026-10-04 02:00 +10:30 -> 02:30 +11:00: 02:00-02:29 never happen, 02:30 does.
      expect(local('30 * * * *', 'Australia/Lord_Howe', '2026-10-03T14:45:00Z', 3)).toEqual([
        '2026-10-04T01:30:00+10:30',
        '2026-10-04T02:30:00+11:00',
        '2026-10-04T03:30:00+11:00',
      ]);
      // The day runs from 2026-10-03T13:30Z to 2026-10-04T13:00Z (23.5 hours).
      expect(day('0 * * * *', 'Australia/Lord_Howe', '2026-10-03T13:30:00Z', '2026-10-04T13:00:00Z')).toHaveLength(23);
    });
  });

  it('across every 2026 transition of every zone tested: fire times strictly increase; a fixed hour fires each label once; a wildcard hour fires at exactly the instants whose wall-clock time matches', () => {
    const zones = ['Europe/London', 'America/New_York', 'Australia/Lord_Howe', 'Australia/Sydney', 'America/Santiago'];
    const wallClock = (zone: string) =>
      new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
      });
    for (const zone of zones) {
      // The transitions of 2026, found by the hour from Intl (independent of zone.ts).
      const fmt = wallClock(zone);
      const naive = (t: number) => {
        const p = Object.fromEntries(fmt.formatToParts(new Date(t)).map((x) => [x.type, x.value]));
        return Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute));
      };
      const changes: number[] = [];
      for (let t = Date.parse('2026-01-01T00:00:00Z'); t < Date.parse('2027-01-01T00:00:00Z'); t += 3_600_000) {
        if (naive(t + 3_600_000) - naive(t) !== 3_600_000) changes.push(t);
      }
      expect(changes.length, zone).toBe(2);
      for (const change of changes) {
        const [from, to] = [change - 86_400_000, change + 86_400_000];
        for (const [expr, wildcardHour] of [
          ['*/15 * * * *', true],
          ['0 * * * *', true],
          ['30 */2 * * *', true],
          ['30 1,2 * * *', false],
          ['*/20 1-3 * * *', false],
        ] as const) {
          const cron = parseCron(expr, zone);
          const fires = between(expr, zone, new Date(from).toISOString(), new Date(to).toISOString());
          expect(strictlyIncreasing(fires), `${zone} ${expr}`).toBe(true);
          const labels = previewCron(cron, fires.length, new Date(from - 1)).map((f) => f.local.slice(0, 19));
          if (!wildcardHour) {
            expect(new Set(labels).size, `${zone} ${expr}`).toBe(labels.length);
            continue;
          }
          // Every minute of the two days, read on the zone's wall clock, matched by croner.
          const matcher = new Cron(expr, { utcOffset: 0, paused: true, mode: '5-or-6-parts', domAndDow: false });
          const expected: string[] = [];
          for (let t = from; t < to; t += 60_000) if (matcher.match(new Date(naive(t)))) expected.push(new Date(t).toISOString());
          expect(fires, `${zone} ${expr}`).toEqual(expected);
        }
      }
    }
  });
});
