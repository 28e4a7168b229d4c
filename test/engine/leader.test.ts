// The leader lease: among started processes one leads, the worker list and stats() say which;
// a leader that cannot renew (its statements held, as in a pause or a starved pool) stops
// leading before its lease ends and another takes over within about one lease, and the write it
// sent before it stalled changes nothing when it finally arrives; one that stops hands over at
// once, while its handlers still drain (its presence lock held until they are done); a process with no queues leads and fires cron; leader: false and reaper: false never
// lead. Real kill -9 and SIGSTOP of a leader process: leader-processes.test.ts.

import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { Baton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob, jobRow } from '../helpers/factory.ts';
import { leaderLeaseRow } from '../helpers/leader.ts';
import { deferred, waitFor } from '../helpers/wait.ts';
import { useEngines } from './harness.ts';

const db = useTestDatabase();

const leaders = (engines: Baton[]) => engines.filter((e) => e.stats().leader);
const oneLeader = (engines: Baton[]) =>
  waitFor(() => (leaders(engines).length === 1 ? leaders(engines)[0] : null), { message: 'exactly one leader' });

/** The moment (performance.now()) `engine` next reports leadership `leader`. */
const leadership = (engine: Baton, leader: boolean) =>
  new Promise<number>((resolve) => engine.events.on('leadership', (e) => e.leader === leader && resolve(performance.now())));

describe('the leader lease', () => {
  const engines = useEngines(db);
  const LEASE = 1_000;
  const opts = { queues: { q: 1 }, pollIntervalMs: 600_000, leaderLeaseMs: LEASE };

  it('exactly one of two workers leads, and the worker list says which', async () => {
    const a = await engines.start(opts);
    const b = await engines.start(opts);
    const leader = await oneLeader([a, b]);
    const follower = leader === a ? b : a;
    expect(follower.stats().leader).toBe(false);
    const listed = await a.admin.workers();
    expect(listed.filter((w) => w.leader).map((w) => w.id)).toEqual([leader.config.workerId]);
  });

  it('a leader that cannot renew stops before its lease ends, another takes over within about a lease, and its late purge deletes nothing', {
    timeout: 30_000,
  }, async () => {
    // A's pool holds every statement once A sends a purge while `pause` is armed: a process
    // that stalls with a leader-only write on its way, its presence session still alive.
    let pause: 'off' | 'armed' | 'on' = 'off';
    let pausedAt = 0;
    const held: Array<() => void> = [];
    const purgeHeld = deferred();
    const latePurge = deferred<number | null>();
    const pool: pg.Pool = engines.pool((config, run) => {
      if (pause === 'armed' && config.name?.endsWith('.job_purge_scan')) {
        pause = 'on';
        pausedAt = performance.now();
        purgeHeld.resolve();
        return new Promise<void>((r) => held.push(r)).then(run).then((res) => {
          const [row] = res.rows as Array<{ deleted: Array<{ n: number }> }>;
          latePurge.resolve(row ? row.deleted.reduce((sum, d) => sum + d.n, 0) : null);
          return res;
        });
      }
      if (pause !== 'on') return run();
      return new Promise<void>((r) => held.push(r)).then(run);
    });
    const a = engines.create({
      ...opts,
      pool,
      retention: { succeededMs: 0, cancelledMs: null, deadLetteredMs: null },
      retentionIntervalMs: 20,
      vacuumDeadTuples: null,
    });
    await a.start();
    await waitFor(() => a.stats().leader, { message: 'A to lead' });
    // B keeps every finished job: only A's purge could delete the one below.
    const b = await engines.start({ ...opts, retention: { succeededMs: null, cancelledMs: null, deadLetteredMs: null } });
    const aLost = leadership(a, false);
    const bLeads = leadership(b, true);
    const before = await leaderLeaseRow(db.pool);
    pause = 'armed';
    const id = await insertJob(db.pool, { queue: 'q', state: 'succeeded', finishedAt: { inMs: -1_000 } });
    await purgeHeld.promise;
    const [lostAt, tookAt] = await Promise.all([aLost, bLeads]);
    // A stopped acting before B could take over, and B took over within about one lease.
    expect(lostAt).toBeLessThan(tookAt);
    expect(lostAt - pausedAt).toBeLessThan(LEASE);
    expect(tookAt - pausedAt).toBeLessThan(LEASE + 2_000);
    const after = await leaderLeaseRow(db.pool);
    expect(after.holder).toBe(b.config.workerId);
    expect(BigInt(after.epoch)).toBeGreaterThan(BigInt(before.epoch));
    // A wakes: its purge, sent under the old epoch, reaches the database now and deletes nothing.
    pause = 'off';
    for (const r of held.splice(0)) r();
    expect(await latePurge.promise).toBe(0);
    await waitFor(async () => (await leaderLeaseRow(db.pool)).epoch === after.epoch && a.stats().leader === false, {
      message: 'A to stay a follower after waking',
    });
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'succeeded' });
    expect(b.stats().leader).toBe(true);
  });

  it('a leader that stops hands the lease over at once', async () => {
    const long = { ...opts, leaderLeaseMs: 20_000 };
    const a = await engines.start(long);
    const b = await engines.start(long);
    const leader = await oneLeader([a, b]);
    const follower = leader === a ? b : a;
    const took = leadership(follower, true);
    const t0 = performance.now();
    await leader.stop();
    expect((await took) - t0).toBeLessThan(2_000 + 3_000);
  });

  it('a leader that stops gives the lease up at once, while its handlers still drain, and keeps its presence lock until they are done', async () => {
    const entered = deferred();
    const gate = engines.gate();
    const a = await engines.start({
      ...opts,
      leaderLeaseMs: 20_000,
      handlers: {
        work: async () => {
          entered.resolve();
          await gate.promise;
        },
      },
    });
    await waitFor(() => a.stats().leader, { message: 'A to lead' });
    const { job } = await a.enqueue({ jobType: 'work', queue: 'q' });
    await entered.promise;
    const stopping = a.stop({ drainMs: 10_000 });
    // The leader's part of the stop runs alongside the drain, not after it.
    await waitFor(async () => !(await leaderLeaseRow(db.pool)).live, { message: 'the lease to be given up during the drain' });
    const presence = async () =>
      (
        await db.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'baton-presence'`,
        )
      ).rows[0].n;
    expect(await presence()).toBe(1);
    expect(await jobRow(db, job.id)).toMatchObject({ state: 'running' });
    gate.resolve();
    await stopping;
    expect(await jobRow(db, job.id)).toMatchObject({ state: 'succeeded' });
    expect(await presence()).toBe(0);
  });

  it('a process with no queues leads and fires cron', async () => {
    const producer = await engines.start({ queues: {}, leaderLeaseMs: LEASE });
    await waitFor(() => producer.stats().leader, { message: 'the producer-only process to lead' });
    const { schedule } = await producer.cron.upsert({
      name: 'every-second',
      cron: '* * * * * *',
      timezone: 'UTC',
      jobType: 'tick',
      queue: 'nobody-works-this',
    });
    await waitFor(
      async () =>
        (await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE idempotency_key LIKE $1`, [`cron:${schedule.id}:%`])).rows[0].n >=
        2,
      { message: 'two occurrences enqueued by the producer-only leader', timeoutMs: 8_000 },
    );
    expect(producer.stats().cron.fired).toBeGreaterThanOrEqual(2);
  });

  it('a process with leader: false or reaper: false never leads', async () => {
    const notEligible = await engines.start({ ...opts, leader: false });
    const noMaintenance = await engines.start({ ...opts, reaper: false });
    // Started later, the eligible one takes the lease the first two never tried.
    const eligible = await engines.start(opts);
    await waitFor(() => eligible.stats().leader === true, { message: 'the eligible worker to lead' });
    expect(notEligible.stats().leader).toBe(false);
    expect(noMaintenance.stats().leader).toBe(false);
    expect((await leaderLeaseRow(db.pool)).holder).toBe(eligible.config.workerId);
  });
});
