// The outbox chaos verdict on hand-made histories: each kind of violation is caught, and
// duplicates explained by a receiver hang or a relay kill are counted, not flagged.

import { describe, expect, it } from 'vitest';
import { checkOutboxChaos, type OutboxChaosInput } from './outbox-checker.ts';

const base = (): OutboxChaosInput => ({
  committedHooks: [
    { key: 'a', orderingKey: 'k', id: 1n },
    { key: 'b', orderingKey: 'k', id: 2n },
    { key: 'c', orderingKey: null, id: 3n },
  ],
  committedJs: ['a:js'],
  rolledBack: new Set(['x']),
  deliveries: [
    { key: 'a', at: 100, hung: false },
    { key: 'b', at: 200, hung: false },
    { key: 'c', at: 300, hung: false },
  ],
  streamIds: ['a:js'],
  kills: [],
  killSlackMs: 2_000,
  claimWindowMs: 3_000,
  unpublished: 0,
});

describe('outbox chaos checker', () => {
  it('passes a clean history', () => {
    expect(checkOutboxChaos(base())).toEqual({ violations: [], duplicates: { total: 0, byHang: 0, byKill: 0 } });
  });

  it('flags lost, phantom, out-of-order, stream duplicates, undrained and unexplained duplicates', () => {
    const flag = (patch: Partial<OutboxChaosInput>) => checkOutboxChaos({ ...base(), ...patch }).violations;
    expect(flag({ deliveries: base().deliveries.slice(1) })).toEqual([expect.stringContaining('lost: committed webhook message a')]);
    expect(flag({ deliveries: [...base().deliveries, { key: 'x', at: 400, hung: false }] })).toEqual([
      expect.stringContaining('phantom: x'),
    ]);
    expect(flag({ deliveries: [{ key: 'b', at: 50, hung: false }, ...base().deliveries.filter((d) => d.key !== 'b')] })).toEqual([
      expect.stringContaining('order: key k'),
    ]);
    expect(flag({ streamIds: ['a:js', 'a:js'] })).toEqual([expect.stringContaining('duplicate in the stream')]);
    expect(flag({ streamIds: [] })).toEqual([expect.stringContaining('lost: committed NATS message')]);
    expect(flag({ unpublished: 2 })).toEqual([expect.stringContaining('drain')]);
    expect(flag({ deliveries: [...base().deliveries, { key: 'c', at: 900, hung: false }] })).toEqual([
      expect.stringContaining('unexplained duplicate: c'),
    ]);
    // A kill long after the first delivery does not explain it: that outcome had been written.
    expect(flag({ deliveries: [...base().deliveries, { key: 'c', at: 9_000, hung: false }], kills: [8_000] })).toEqual([
      expect.stringContaining('unexplained duplicate: c'),
    ]);
  });

  it('judges order by arrival, not by the millisecond a message arrived in', () => {
    const sameMs = (keys: string[]) => keys.map((key) => ({ key, at: 100, hung: false }));
    expect(checkOutboxChaos({ ...base(), deliveries: sameMs(['a', 'b', 'c']) }).violations).toEqual([]);
    expect(checkOutboxChaos({ ...base(), deliveries: sameMs(['b', 'a', 'c']) }).violations).toEqual([
      'order: key k: b was first delivered before a, recorded earlier',
    ]);
  });

  it('counts duplicates after a hang or around a kill as explained', () => {
    const r = checkOutboxChaos({
      ...base(),
      deliveries: [
        { key: 'a', at: 100, hung: true },
        { key: 'a', at: 1_500, hung: false },
        { key: 'b', at: 1_600, hung: false },
        { key: 'b', at: 5_000, hung: false },
        { key: 'c', at: 300, hung: false },
      ],
      kills: [2_000],
    });
    expect(r).toEqual({ violations: [], duplicates: { total: 2, byHang: 1, byKill: 1 } });
  });
});
