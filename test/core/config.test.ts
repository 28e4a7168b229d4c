// Unit tests (no database) of engine option parsing: documented defaults, a
// frozen result, and INVALID_CONFIG errors that name the offending field.

import { describe, expect, it } from 'vitest';
import {
  BACKOFF_BASE_MS_DEFAULT,
  BACKOFF_CAP_MS_DEFAULT,
  DRAIN_MS_DEFAULT,
  FAST_RECLAIM_GRACE_MS_DEFAULT,
  LEASE_MS_DEFAULT,
  MAX_ATTEMPTS_DEFAULT,
  NOTIFY_DEBOUNCE_MS_DEFAULT,
  POLL_INTERVAL_MS_DEFAULT,
  parseEngineConfig,
} from '../../src/core/config.ts';
import { BatonError } from '../../src/types/errors.ts';

const wid = () => 'generated-worker';

/** Parses `input`, expecting INVALID_CONFIG; returns the error. */
function invalid(input: unknown): BatonError {
  try {
    parseEngineConfig(input, wid);
  } catch (err) {
    expect(err).toBeInstanceOf(BatonError);
    expect((err as BatonError).code).toBe('INVALID_CONFIG');
    return err as BatonError;
  }
  throw new Error(`expected INVALID_CONFIG for ${JSON.stringify(input)}`);
}

describe('parseEngineConfig', () => {
  it('fills the documented defaults', () => {
    const c = parseEngineConfig({}, wid);
    expect(c).toMatchObject({
      schema: 'baton',
      queues: {},
      dispatch: 'notify',
      claimIntoRunning: true,
      asyncClaims: true,
      leaseMs: LEASE_MS_DEFAULT,
      heartbeatMs: Math.floor(LEASE_MS_DEFAULT / 3),
      pollIntervalMs: POLL_INTERVAL_MS_DEFAULT,
      notifyDebounceMs: NOTIFY_DEBOUNCE_MS_DEFAULT,
      reaper: true,
      fastReclaim: true,
      fastReclaimGraceMs: FAST_RECLAIM_GRACE_MS_DEFAULT,
      drainMs: DRAIN_MS_DEFAULT,
      maxAttemptsDefault: MAX_ATTEMPTS_DEFAULT,
      backoffBaseMs: BACKOFF_BASE_MS_DEFAULT,
      backoffCapMs: BACKOFF_CAP_MS_DEFAULT,
      workerId: 'generated-worker',
    });
    expect(LEASE_MS_DEFAULT).toBe(5_000);
    expect(c.heartbeatDeadlineMs).toBeGreaterThan(0);
    expect(c.heartbeatDeadlineMs).toBeLessThanOrEqual(c.leaseMs);
    expect(parseEngineConfig(undefined, wid).schema).toBe('baton');
  });

  it('derives heartbeatMs from leaseMs and keeps explicit values', () => {
    expect(parseEngineConfig({ leaseMs: 900 }, wid).heartbeatMs).toBe(300);
    const c = parseEngineConfig(
      { leaseMs: 2_000, heartbeatMs: 500, workerId: 'w-1', queues: { emails: 4 }, dispatch: 'poll', claimIntoRunning: false },
      wid,
    );
    expect(c).toMatchObject({ heartbeatMs: 500, workerId: 'w-1', queues: { emails: 4 }, dispatch: 'poll', claimIntoRunning: false });
  });

  it('returns a frozen object whose queues are frozen too', () => {
    const input = { queues: { a: 1 } };
    const c = parseEngineConfig(input, wid);
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.queues)).toBe(true);
    expect(() => {
      (c as { leaseMs: number }).leaseMs = 1;
    }).toThrow(TypeError);
    // Mutating the caller's input afterwards does not leak into the config.
    input.queues.a = 99;
    expect(c.queues.a).toBe(1);
  });

  it.each([
    ['heartbeatMs', { leaseMs: 1_000, heartbeatMs: 1_000 }],
    ['heartbeatMs', { leaseMs: 1_000, heartbeatMs: 5_000 }],
    ['schema', { schema: 'Bad-Schema' }],
    ['schema', { schema: 'pg_catalog' }],
    ['schema', { schema: 'x'.repeat(64) }],
    ['schema', { schema: 'a"; DROP TABLE jobs; --' }],
    ['leaseMs', { leaseMs: 50 }],
    ['leaseMs', { leaseMs: 1.5 }],
    ['dispatch', { dispatch: 'push' }],
    ['queues', { queues: { 'has space': 1 } }],
    ['queues', { queues: { ok: 0 } }],
    ['queues', { queues: { 'a//b': 1 } }],
    ['queues', { queues: { '/': 1 } }],
    ['maxAttemptsDefault', { maxAttemptsDefault: 0 }],
    ['backoffCapMs', { backoffBaseMs: 2_000, backoffCapMs: 1_000 }],
    ['heartbeatDeadlineMs', { leaseMs: 1_000, heartbeatDeadlineMs: 2_000 }],
    ['pollIntervalMs', { pollIntervalMs: -1 }],
    ['workerId', { workerId: '' }],
  ])('rejects a bad %s and names it', (field, input) => {
    const err = invalid(input);
    expect(err.message).toContain(field);
    expect(JSON.stringify(err.details)).toContain(field);
  });

  it('rejects unknown options, naming them', () => {
    const err = invalid({ leaseMS: 5_000 });
    expect(err.message).toContain('leaseMS');
  });

  it('names every bad field at once', () => {
    const err = invalid({ schema: 'Nope', dispatch: 'x', leaseMs: 10 });
    for (const f of ['schema', 'dispatch', 'leaseMs']) expect(err.message).toContain(f);
  });
});
