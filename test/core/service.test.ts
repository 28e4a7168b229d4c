// The service shape: a group starts its members in order and stops them in reverse (or all at
// once), a failing stop neither skips the rest nor goes unreported, a stop before start and a
// second stop do nothing, and a stop during start leaves nothing running. The leader group runs
// its services exactly while a real leader lease (PostgreSQL) is held.

import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/core/clock.ts';
import { LeaderLease } from '../../src/core/leader-lease.ts';
import { Leadership } from '../../src/core/leadership.ts';
import { type Service, ServiceGroup, ServiceStopError, service } from '../../src/core/service.ts';
import { PgLeaderStore } from '../../src/db/pg/pg-leader.ts';
import { isBatonError } from '../../src/types/errors.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { leaderLeaseRow, takeLeaderLease } from '../helpers/leader.ts';
import { deferred, waitFor } from '../helpers/wait.ts';

/** In-memory services writing what happened to `log`; a stop resolves after a turn, like one with work in flight. */
function recorder(log: string[]) {
  return (name: string, o: { failStop?: boolean; start?: () => Promise<void> } = {}): Service => {
    let running = false;
    return {
      name,
      start: () => {
        running = true;
        log.push(`start ${name}`);
        return o.start?.();
      },
      stop: async () => {
        if (!running) return;
        running = false;
        log.push(`stop ${name}`);
        await new Promise((r) => setTimeout(r, 1));
        log.push(`stopped ${name}`);
        if (o.failStop) throw new Error(`${name} failed`);
      },
    };
  };
}

describe('ServiceGroup', () => {
  it('starts in order and stops in reverse, each stop awaited before the next begins', async () => {
    const log: string[] = [];
    const s = recorder(log);
    const group = new ServiceGroup('g', [s('a'), s('b'), s('c')]);
    await group.start();
    await group.stop();
    expect(log).toEqual(['start a', 'start b', 'start c', 'stop c', 'stopped c', 'stop b', 'stopped b', 'stop a', 'stopped a']);
  });

  it("'together' begins every stop at once, last started first, and waits for all", async () => {
    const log: string[] = [];
    const s = recorder(log);
    const group = new ServiceGroup('g', [s('a'), s('b')], { stop: 'together' });
    await group.start();
    await group.stop();
    expect(log).toEqual(['start a', 'start b', 'stop b', 'stop a', 'stopped b', 'stopped a']);
  });

  it('a failing stop skips none of the others; one failure rejects with its error, several with all of them', async () => {
    const log: string[] = [];
    const s = recorder(log);
    const one = new ServiceGroup('g', [s('a'), s('b', { failStop: true }), s('c')]);
    await one.start();
    await expect(one.stop()).rejects.toThrow('b failed');
    expect(log.filter((l) => l.startsWith('stopped'))).toEqual(['stopped c', 'stopped b', 'stopped a']);

    const two = new ServiceGroup('g', [s('d', { failStop: true }), s('e', { failStop: true })]);
    await two.start();
    const err = await two.stop().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceStopError);
    expect((err as ServiceStopError).failures.map((f) => f.service)).toEqual(['e', 'd']);
    expect((err as ServiceStopError).errors.map((e: Error) => e.message)).toEqual(['e failed', 'd failed']);
  });

  it("'together': a stop that throws instead of rejecting still lets the others stop", async () => {
    const log: string[] = [];
    const s = recorder(log);
    const throwing: Service = {
      name: 'sync',
      start: () => undefined,
      stop: () => {
        throw new Error('sync failed');
      },
    };
    const group = new ServiceGroup('g', [s('a'), throwing, s('b')], { stop: 'together' });
    await group.start();
    await expect(group.stop()).rejects.toThrow('sync failed');
    expect(log.filter((l) => l.startsWith('stopped')).sort()).toEqual(['stopped a', 'stopped b']);
  });

  it('a stop before start does nothing, and a second stop returns the first', async () => {
    const log: string[] = [];
    const s = recorder(log);
    const group = new ServiceGroup('g', [s('a'), s('b')]);
    await group.stop();
    expect(log).toEqual([]);
    await group.start();
    const first = group.stop();
    expect(group.stop()).toBe(first);
    await first;
    await group.stop();
    expect(log).toEqual(['start a', 'start b', 'stop b', 'stopped b', 'stop a', 'stopped a']);
  });

  it('a stop during a start stops what started (the one still starting too), starts nothing more, and rejects the start with SHUTTING_DOWN', async () => {
    const log: string[] = [];
    const s = recorder(log);
    const connecting = deferred();
    const group = new ServiceGroup('g', [s('a'), s('b', { start: () => connecting.promise }), s('c')]);
    const starting = group.start();
    const stopping = group.stop();
    connecting.resolve();
    const err = await starting.catch((e: unknown) => e);
    expect(isBatonError(err) && err.code).toBe('SHUTTING_DOWN');
    await stopping;
    expect(log).toEqual(['start a', 'start b', 'stop b', 'stopped b', 'stop a', 'stopped a']);
  });

  it('a failed start leaves the started members, the failed one included, for stop()', async () => {
    const log: string[] = [];
    const s = recorder(log);
    const group = new ServiceGroup('g', [s('a'), s('b', { start: () => Promise.reject(new Error('no connection')) }), s('c')]);
    await expect(group.start()).rejects.toThrow('no connection');
    await group.stop();
    expect(log).toEqual(['start a', 'start b', 'stop b', 'stopped b', 'stop a', 'stopped a']);
  });

  it('starts again after a stop (as the leader group does at each new leadership)', async () => {
    const log: string[] = [];
    const group = new ServiceGroup('g', [recorder(log)('a')]);
    await group.start();
    await group.stop();
    await group.start();
    await group.stop();
    expect(log).toEqual(['start a', 'stop a', 'stopped a', 'start a', 'stop a', 'stopped a']);
  });

  it('service() fills in a missing side', async () => {
    const log: string[] = [];
    const group = new ServiceGroup('g', [
      service('closer', { stop: async () => void log.push('closed') }),
      service('opener', { start: () => void log.push('opened') }),
    ]);
    await group.start();
    await group.stop();
    expect(log).toEqual(['opened', 'closed']);
  });
});

describe('Leadership', () => {
  const db = useTestDatabase();
  const LEASE_MS = 400;

  it('runs its services exactly while the lease is held: starts them on taking it, stops them in reverse on losing it and on stop()', {
    timeout: 20_000,
  }, async () => {
    const log: string[] = [];
    const s = recorder(log);
    const changes: boolean[] = [];
    const errors: unknown[] = [];
    let leadership: Leadership | null = null;
    const lease = new LeaderLease({
      store: new PgLeaderStore(db.pool, '"baton"'),
      holder: 'group-test',
      leaseMs: LEASE_MS,
      clock: systemClock,
      lockNamespace: 0,
      lockKey: () => null,
      onChange: (leader) => {
        changes.push(leader);
        leadership?.changed(leader);
      },
      onError: (err) => errors.push(err),
    });
    leadership = new Leadership(lease, [s('retention'), s('ticker')], (err) => errors.push(err));
    const started = () => log.filter((l) => l.startsWith('start')).length;

    leadership.start();
    await waitFor(() => started() === 2, { message: 'the services to start with the lease' });
    expect(lease.isLeader()).toBe(true);
    expect(log).toEqual(['start retention', 'start ticker']);

    // Another holder takes the row (as after a pause past the lease): the next renewal fails.
    await takeLeaderLease(db.pool, { holder: 'someone-else', ms: LEASE_MS });
    await waitFor(() => log.at(-1) === 'stopped retention', { message: 'the services to stop with the lease' });
    expect(log.slice(2)).toEqual(['stop ticker', 'stopped ticker', 'stop retention', 'stopped retention']);
    expect(lease.isLeader()).toBe(false);

    // That lease expires unrenewed: this process takes it again and the services start again.
    await waitFor(() => started() === 4, { timeoutMs: 10_000, message: 'the services to start again' });
    expect(log.slice(6)).toEqual(['start retention', 'start ticker']);

    await leadership.stop();
    expect(log.slice(8)).toEqual(['stop ticker', 'stopped ticker', 'stop retention', 'stopped retention']);
    expect((await leaderLeaseRow(db.pool)).live).toBe(false);
    expect(changes).toEqual([true, false, true, false]);
    // After stop(), a change starts nothing.
    leadership.changed(true);
    await new Promise((r) => setTimeout(r, 20));
    expect(started()).toBe(4);
    expect(errors).toEqual([]);
  });
});
