// Leader election: among started workers one holds the database's leader lock on its
// presence session and runs the maintenance; /api/workers shows it; when its session
// dies another worker takes over within about a second; a process with the reaper off
// never leads.

import { describe, expect, it } from 'vitest';
import type { Baton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { useEngines } from './harness.ts';

const db = useTestDatabase();

const leaders = (engines: Baton[]) => engines.filter((e) => e.stats().leader);

describe('leader election', () => {
  const engines = useEngines(db);
  const opts = { queues: { q: 1 }, pollIntervalMs: 600_000 };

  it('exactly one of two workers leads, and the worker list says which', async () => {
    const a = await engines.start(opts);
    const b = await engines.start(opts);
    const [leader] = await waitFor(() => (leaders([a, b]).length === 1 ? leaders([a, b]) : null), { message: 'one leader' });
    const follower = leader === a ? b : a;
    expect(follower.stats().leader).toBe(false);
    const listed = await a.admin.workers();
    expect(listed.filter((w) => w.leader).map((w) => w.id)).toEqual([leader!.config.workerId]);
  });

  it('when the leader’s session dies, the other worker leads within about a second', async () => {
    const a = await engines.start(opts);
    const b = await engines.start(opts);
    const [leader] = await waitFor(() => (leaders([a, b]).length === 1 ? leaders([a, b]) : null), { message: 'one leader' });
    const follower = leader === a ? b : a;
    const took = new Promise<number>((resolve) => follower.events.on('leadership', (e) => e.leader && resolve(performance.now())));
    // The leader's presence session is its lock: end it from outside, as a crash or a network
    // cut would, and keep that process from coming back (stop() at once, before its reconnect).
    const killed = await db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'baton-presence'
          AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = 0 AND objsubid = 2 AND granted)`,
    );
    const t0 = performance.now();
    const stopped = leader!.stop({ drainMs: 0 });
    expect(killed.rowCount).toBe(1);
    const at = await took;
    await stopped;
    // The follower tries every LEADER_RETRY_MS_DEFAULT (250 ms); generous for a loaded machine.
    expect(at - t0).toBeLessThan(3_000);
    expect(follower.stats().leader).toBe(true);
    await waitFor(
      async () =>
        (await follower.admin.workers())
          .filter((w) => w.leader)
          .map((w) => w.id)
          .join() === follower.config.workerId,
      {
        message: 'the worker list to name the new leader',
      },
    );
  });

  it('a worker with the reaper off never leads', async () => {
    const solo = await engines.start({ ...opts, reaper: false });
    // A leader-eligible worker started later takes the lock the first one never tried.
    const eligible = await engines.start(opts);
    await waitFor(() => eligible.stats().leader === true, { message: 'the eligible worker to lead' });
    expect(solo.stats().leader).toBe(false);
  });
});
