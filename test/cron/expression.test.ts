// Cron expressions and DST, without a database: every row of the expression and DST rules.

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
  describe('spring forward: a skipped time fires once, just past the gap', () => {
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
    it('an every-30-minutes schedule keeps one fire per label, shifted ones included (London)', () => {
      expect(local('*/30 * * * *', 'Europe/London', '2026-03-29T00:00:00Z', 4)).toEqual([
        '2026-03-29T00:30:00+00:00',
        // 01:00 and 01:30 never happen: both fire once, at 02:00.
        '2026-03-29T02:00:00+01:00',
        '2026-03-29T02:30:00+01:00',
        '2026-03-29T03:00:00+01:00',
      ]);
    });
  });

  describe('fall back: a repeated time fires once, at its first instance', () => {
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

  describe('an hourly schedule fires once per wall-clock hour label', () => {
    const day = (zone: string, from: string, to: string) => between('0 * * * *', zone, from, to);
    it('Europe/London: 24 times on the 25-hour fall-back day, 23 on the 23-hour spring day', () => {
      // Local midnight to midnight: 2026-10-25 00:00 BST is 2026-10-24T23:00Z.
      const fall = day('Europe/London', '2026-10-24T23:00:00Z', '2026-10-26T00:00:00Z');
      expect(fall).toHaveLength(24);
      const spring = day('Europe/London', '2026-03-29T00:00:00Z', '2026-03-29T23:00:00Z');
      expect(spring).toHaveLength(23);
    });
    it('America/New_York: 24 times on the fall-back day', () => {
      expect(day('America/New_York', '2026-11-01T04:00:00Z', '2026-11-02T05:00:00Z')).toHaveLength(24);
    });
    it('Australia/Sydney: 24 times on the fall-back day', () => {
      // 2026-04-05 00:00 AEDT is 2026-04-04T13:00Z; 2026-04-06 00:00 AEST is 2026-04-05T14:00Z.
      expect(day('Australia/Sydney', '2026-04-04T13:00:00Z', '2026-04-05T14:00:00Z')).toHaveLength(24);
    });
    it('Australia/Lord_Howe: 24 times on the 24.5-hour fall-back day', () => {
      // 2026-04-05 00:00 +11:00 is 2026-04-04T13:00Z; 2026-04-06 00:00 +10:30 is 2026-04-05T13:30Z.
      expect(day('Australia/Lord_Howe', '2026-04-04T13:00:00Z', '2026-04-05T13:30:00Z')).toHaveLength(24);
    });
  });

  it('fire times strictly increase across every 2026 transition, one fire per label, in every zone tested', () => {
    const zones = ['Europe/London', 'America/New_York', 'Australia/Lord_Howe', 'Australia/Sydney', 'America/Santiago'];
    for (const zone of zones) {
      // Every transition of 2026 in these zones falls in March-April or September-November.
      for (const [from, to] of [
        ['2026-03-01T00:00:00Z', '2026-04-15T00:00:00Z'],
        ['2026-09-01T00:00:00Z', '2026-11-10T00:00:00Z'],
      ] as const) {
        for (const expr of ['*/15 * * * *', '30 1,2 * * *', '0 * * * *']) {
          const fires = between(expr, zone, from, to);
          expect(strictlyIncreasing(fires), `${zone} ${expr}`).toBe(true);
          // Every label once: no two fires share a local wall-clock label.
          const labels = previewCron(parseCron(expr, zone), fires.length, new Date(Date.parse(from) - 1)).map((f) => f.local.slice(0, 19));
          expect(new Set(labels).size, `${zone} ${expr}`).toBe(labels.length);
        }
      }
    }
  });

  it('next() from inside the repeated hour does not fire a label again', () => {
    const s = parseCron('*/15 * * * *', 'Europe/London');
    // 01:20 GMT, the second pass: 01:30 and 01:45 already fired in the first (BST) pass.
    expect(s.next(new Date('2026-10-25T01:20:00Z'))?.toISOString()).toBe('2026-10-25T02:00:00.000Z');
  });
});
