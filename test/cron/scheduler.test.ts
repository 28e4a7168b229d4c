// The ticker on a real PostgreSQL, with a clock the test moves: firing, each misfire policy,
// catchUpLimit and catch-up run_at, invalid schedules disabling themselves, two tickers racing
// the same occurrences, a ticker dying between its two writes (they commit together or not at
// all), next_fire_at never moving back, nothing fired under an epoch that lost the lease, and a
// workflow schedule's occurrence starting one run however many tickers fire it.

import { beforeEach, describe, expect, it } from 'vitest';
import { Scheduler, type SchedulerDeps } from '../../src/core/cron/scheduler.ts';
import { cronChannelFor } from '../../src/core/notifier.ts';
import { PgLeaderStore } from '../../src/db/pg/pg-leader.ts';
import { PgScheduleStore } from '../../src/db/pg/pg-schedules.ts';
import { PgWorkflowStore } from '../../src/db/pg/workflow-store.ts';
import type { ScheduleStore } from '../../src/driver/schedule-store.ts';
import { BatonError } from '../../src/types/errors.ts';
import type { MisfirePolicy } from '../../src/types/schedule.ts';
import { useEngines } from '../engine/harness.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { takeLeaderLease } from '../helpers/leader.ts';

const db = useTestDatabase();
const T0 = Date.parse('2026-06-01T12:00:00Z');
const MIN = 60_000;

interface JobRow {
  run_at: Date;
  idempotency_key: string;
  state: string;
  queue: string;
  job_type: string;
  payload: unknown;
}
const jobs = async () =>
  (await db.query<JobRow>('SELECT run_at, idempotency_key, state, queue, job_type, payload FROM baton.jobs ORDER BY run_at, id')).rows;

describe('scheduler', () => {
  const engines = useEngines(db);
  let now = T0;
  let epoch = '';
  const store = (): ScheduleStore => new PgScheduleStore(db.pool, '"baton"', cronChannelFor('baton'));
  const leader = () => new PgLeaderStore(db.pool, '"baton"');

  beforeEach(async () => {
    await db.query('TRUNCATE baton.schedules');
    now = T0;
    epoch = await takeLeaderLease(db.pool);
  });

  function scheduler(over: Partial<SchedulerDeps> = {}): Scheduler & { disabled: string[]; misfires: MisfirePolicy[] } {
    const producer = engines.producer();
    const disabled: string[] = [];
    const misfires: MisfirePolicy[] = [];
    const s = new Scheduler({
      store: store(),
      enqueue: (specs, client) => producer.enqueueMany(specs, { client, notify: false }),
      resolveWorkflow: () => Promise.reject(new Error('no workflow schedules here')),
      startRun: () => Promise.reject(new Error('no workflow schedules here')),
      wake: () => undefined,
      leaderEpoch: () => epoch,
      fenced: (e, fn) => leader().leaderFenced({ epoch: e, idleMs: 10_000, stillLeader: () => true }, fn),
      now: () => now,
      misfireThresholdMs: 10_000,
      maxAttemptsDefault: 5,
      maxSleepMs: 60_000,
      onFired: () => undefined,
      onMisfire: (policy) => misfires.push(policy),
      onDisabled: (_, reason) => disabled.push(reason),
      onError: (err) => {
        throw err;
      },
      ...over,
    });
    return Object.assign(s, { disabled, misfires });
  }

  /** Inserts a schedule whose next fire time is `next` (as a ticker left it, or a stopped cluster). */
  async function insert(p: {
    cron: string;
    next: number;
    policy?: MisfirePolicy;
    limit?: number;
    name?: string;
    timezone?: string;
    jobType?: string;
  }) {
    const r = await db.query<{ id: string }>(
      `INSERT INTO baton.schedules (tenant_id, name, cron, timezone, job_type, queue, payload, misfire_policy, catch_up_limit, next_fire_at)
       VALUES ('t1', $1, $2, $3, $4, 'q', '{"k":1}', $5, $6, $7) RETURNING id::text`,
      [
        p.name ?? 'nightly',
        p.cron,
        p.timezone ?? 'Europe/London',
        p.jobType ?? 'report',
        p.policy ?? 'fire_once',
        p.limit ?? 100,
        new Date(p.next),
      ],
    );
    return r.rows[0]!.id;
  }
  const row = async (id: string) =>
    (await db.query('SELECT next_fire_at, last_fired_at, enabled, disabled_reason FROM baton.schedules WHERE id = $1', [id])).rows[0];

  it('fires an occurrence as one pending job at its instant, keyed by schedule and instant, and moves on', async () => {
    const id = await insert({ cron: '* * * * *', next: T0 });
    const s = scheduler();
    now = T0 - 1;
    expect((await s.tick()).created).toBe(0);
    expect(await jobs()).toEqual([]);
    now = T0 + 5;
    expect((await s.tick()).created).toBe(1);
    const [job] = await jobs();
    expect(job).toMatchObject({ state: 'pending', queue: 'q', job_type: 'report', payload: { k: 1 } });
    expect(job!.run_at.getTime()).toBe(T0);
    expect(job!.idempotency_key).toBe(`cron:${id}:2026-06-01T12:00:00.000Z`);
    const r = await row(id);
    expect(r.next_fire_at.getTime()).toBe(T0 + MIN);
    expect(r.last_fired_at.getTime()).toBe(T0);
    // Nothing is due again until the next minute.
    now = T0 + MIN - 1;
    expect((await s.tick()).created).toBe(0);
    expect(s.misfires).toEqual([]);
  });

  describe('misfire policies, after an hour with nothing ticking (every minute, 60 missed)', () => {
    const after = T0 + 60 * MIN - 1; // 12:59:59.999: the occurrences 12:00 ... 12:59 were missed.
    it('skip: fires none of the missed occurrences', async () => {
      const id = await insert({ cron: '* * * * *', next: T0, policy: 'skip' });
      const s = scheduler();
      now = after + 30_000; // 13:00:30: 13:00 is 30 s old, past the 10 s threshold: missed too.
      await s.tick();
      expect(await jobs()).toEqual([]);
      expect(s.misfires).toEqual(['skip']);
      expect((await row(id)).next_fire_at.getTime()).toBe(T0 + 61 * MIN);
    });
    it('skip: an occurrence younger than the threshold is on time and fires', async () => {
      await insert({ cron: '* * * * *', next: T0, policy: 'skip' });
      now = T0 + 60 * MIN + 2_000;
      await scheduler().tick();
      expect((await jobs()).map((j) => j.run_at.getTime())).toEqual([T0 + 60 * MIN]);
    });
    it('fire_once: one job, for the latest missed occurrence, at its own instant', async () => {
      const id = await insert({ cron: '* * * * *', next: T0, policy: 'fire_once' });
      now = after;
      await scheduler().tick();
      const js = await jobs();
      expect(js.map((j) => j.run_at.toISOString())).toEqual(['2026-06-01T12:59:00.000Z']);
      expect((await row(id)).next_fire_at.getTime()).toBe(T0 + 60 * MIN);
    });
    it('fire_all: every missed occurrence, each job at its occurrence’s instant', async () => {
      await insert({ cron: '* * * * *', next: T0, policy: 'fire_all' });
      now = after;
      await scheduler().tick();
      const js = await jobs();
      expect(js).toHaveLength(60);
      expect(js.map((j) => j.run_at.getTime())).toEqual(Array.from({ length: 60 }, (_, i) => T0 + i * MIN));
      expect(new Set(js.map((j) => j.idempotency_key)).size).toBe(60);
    });
    it('fire_all is bounded by catchUpLimit: the latest occurrences, at their own instants', async () => {
      await insert({ cron: '* * * * *', next: T0, policy: 'fire_all', limit: 5 });
      now = after;
      const s = scheduler();
      await s.tick();
      expect((await jobs()).map((j) => j.run_at.toISOString())).toEqual([
        '2026-06-01T12:55:00.000Z',
        '2026-06-01T12:56:00.000Z',
        '2026-06-01T12:57:00.000Z',
        '2026-06-01T12:58:00.000Z',
        '2026-06-01T12:59:00.000Z',
      ]);
      expect(s.misfires).toEqual(['fire_all']);
    });
    it('a schedule firing every second and stopped for a year catches up in one bounded tick', async () => {
      const id = await insert({ cron: '* * * * * *', next: T0, policy: 'fire_all', limit: 3 });
      now = T0 + 365 * 24 * 60 * MIN + 500;
      await scheduler().tick();
      expect((await jobs()).map((j) => j.run_at.getTime())).toEqual([
        now - 12_500,
        now - 11_500,
        now - 10_500,
        ...range(now - 10_000, now),
      ]);
      expect((await row(id)).next_fire_at.getTime()).toBe(now + 500);
    });
  });

  it('disables invalid schedules with a readable reason, and fires the valid ones of the same batch', async () => {
    const good = await insert({ cron: '* * * * *', next: T0, name: 'good' });
    const badCron = await insert({ cron: '99 * * * *', next: T0, name: 'bad-cron' });
    const badZone = await insert({ cron: '* * * * *', next: T0, name: 'bad-zone', timezone: 'Mars/Olympus' });
    const badType = await insert({ cron: '* * * * *', next: T0, name: 'bad-type', jobType: 'has space' });
    const never = await insert({ cron: '0 0 30 2 *', next: T0, name: 'never' });
    now = T0 + 1;
    const s = scheduler();
    const r = await s.tick();
    expect(r.disabled).toBe(4);
    expect((await jobs()).map((j) => j.idempotency_key)).toEqual([`cron:${good}:2026-06-01T12:00:00.000Z`]);
    for (const [id, text] of [
      [badCron, 'invalid cron expression'],
      [badZone, 'unknown time zone "Mars/Olympus"'],
      [badType, 'jobType'],
      [never, 'has no fire time after'],
    ] as const) {
      const got = await row(id);
      expect(got.enabled, id).toBe(false);
      expect(got.disabled_reason, id).toContain(text);
    }
    // The ticker does not spin on them: they are no longer due.
    expect((await s.tick()).disabled).toBe(0);
  });

  it('two tickers racing the same occurrences make exactly one job each', async () => {
    await insert({ cron: '* * * * * *', next: T0, policy: 'fire_all', name: 'a' });
    await insert({ cron: '*/2 * * * * *', next: T0, policy: 'fire_all', name: 'b' });
    const [a, b] = [scheduler(), scheduler()];
    for (let i = 0; i < 20; i++) {
      now = T0 + i * 700;
      await Promise.all([a.tick(), b.tick()]);
    }
    const js = await jobs();
    const expected = range(T0, now).length + range(T0, now).filter((t) => (t - T0) % 2_000 === 0).length;
    expect(js).toHaveLength(expected);
    expect(new Set(js.map((j) => j.idempotency_key)).size).toBe(expected);
  });

  describe('a workflow schedule', () => {
    const workflowStore = () => new PgWorkflowStore(db.pool, '"baton"');
    const runs = async () =>
      (
        await db.query<{ idempotency_key: string; name: string; input: unknown; queue: string; job_type: string }>(
          `SELECT r.idempotency_key, r.name, r.input, j.queue, j.job_type FROM baton.workflow_runs r JOIN baton.jobs j ON j.id = r.job_id
         ORDER BY r.idempotency_key`,
        )
      ).rows;
    /** A ticker that starts runs as the engine's does: in its fenced transaction, keyed by the occurrence. */
    const runScheduler = (over: Partial<SchedulerDeps> = {}) =>
      scheduler({
        resolveWorkflow: async () => ({ queue: 'wf', maxAttempts: 3 }),
        startRun: async (occ, target, client) => {
          const r = await workflowStore().workflowStartRun(
            {
              name: occ.workflow,
              tenantId: occ.tenantId,
              input: JSON.stringify(occ.input),
              idempotencyKey: occ.idempotencyKey,
              queue: target.queue,
              jobType: `workflow:${occ.workflow}`,
              maxAttempts: target.maxAttempts,
            },
            client,
          );
          return { created: !r.duplicate };
        },
        ...over,
      });
    beforeEach(async () => {
      await db.query('TRUNCATE baton.workflow_runs CASCADE');
    });

    it('starts one run per occurrence on the workflow queue; a second ticker firing the same occurrences (a failover) starts none', async () => {
      const id = await insert({ cron: '* * * * *', next: T0, policy: 'fire_all' });
      await db.query(`UPDATE baton.schedules SET workflow = 'report', job_type = 'workflow:report' WHERE id = $1`, [id]);
      now = T0 + 2 * MIN + 1;
      // The new leader read the due schedule before the old leader's tick committed: it fires
      // the same three occurrences again, and its fence passes (the lease is its own now).
      const base = store();
      const stale = await base.scheduleListDue({ now: new Date(now), limit: 10 });
      expect((await runScheduler().tick()).created).toBe(3);
      const late = runScheduler({
        store: new Proxy(base, {
          get: (t, k) => {
            if (k === 'scheduleListDue') return async () => stale;
            const v = Reflect.get(t, k) as unknown;
            return typeof v === 'function' ? (v as (...args: never[]) => unknown).bind(t) : v;
          },
        }),
      });
      expect((await late.tick()).created).toBe(0);
      const rs = await runs();
      expect(rs.map((r) => r.idempotency_key)).toEqual([0, 1, 2].map((i) => `cron:${id}:${new Date(T0 + i * MIN).toISOString()}`));
      expect(rs.every((r) => r.name === 'report' && r.queue === 'wf' && r.job_type === 'workflow:report')).toBe(true);
      expect(rs[0]!.input).toEqual({ k: 1 });
      expect(await jobs()).toHaveLength(3);
    });

    it('two tickers racing the same occurrences start exactly one run each', async () => {
      const id = await insert({ cron: '* * * * * *', next: T0, policy: 'fire_all' });
      await db.query(`UPDATE baton.schedules SET workflow = 'report', job_type = 'workflow:report' WHERE id = $1`, [id]);
      const [a, b] = [runScheduler(), runScheduler()];
      for (let i = 0; i < 10; i++) {
        now = T0 + i * 700;
        await Promise.all([a.tick(), b.tick()]);
      }
      expect((await runs()).map((r) => r.idempotency_key)).toEqual(range(T0, now).map((t) => `cron:${id}:${new Date(t).toISOString()}`));
    });

    it('disables a schedule whose workflow left the registry, and an old row whose jobType is workflow:<name>', async () => {
      const gone = await insert({ cron: '* * * * *', next: T0, name: 'gone' });
      await db.query(`UPDATE baton.schedules SET workflow = 'gone', job_type = 'workflow:gone' WHERE id = $1`, [gone]);
      const old = await insert({ cron: '* * * * *', next: T0, name: 'old', jobType: 'workflow:report' });
      now = T0 + 1;
      const s = runScheduler({
        resolveWorkflow: async (name) => {
          throw new BatonError('WORKFLOW_NOT_FOUND', `no workflow named "${name}" is defined`);
        },
      });
      expect(await s.tick()).toMatchObject({ created: 0, disabled: 2 });
      expect((await row(gone)).disabled_reason).toContain('no workflow named "gone"');
      expect((await row(old)).disabled_reason).toContain('use a workflow target');
      expect(await runs()).toEqual([]);
      expect(await jobs()).toEqual([]);
    });
  });

  it('a ticker that dies after enqueuing but before advancing leaves neither write; the next tick fires once', async () => {
    const id = await insert({ cron: '* * * * *', next: T0, policy: 'fire_all' });
    now = T0 + 3 * MIN + 1;
    const base = store();
    const dying = scheduler({
      store: Object.assign(Object.create(base), {
        scheduleAdvanceMany: () => Promise.reject(new Error('killed between the two writes')),
        scheduleListDue: base.scheduleListDue.bind(base),
      }),
    });
    await expect(dying.tick()).rejects.toThrow('killed');
    // One transaction: the jobs went with the failed advance.
    expect(await jobs()).toHaveLength(0);
    expect((await row(id)).next_fire_at.getTime()).toBe(T0);
    const r = await scheduler().tick();
    expect(r.created).toBe(4);
    expect(await jobs()).toHaveLength(4);
    expect((await row(id)).next_fire_at.getTime()).toBe(T0 + 4 * MIN);
  });

  it('a ticker whose epoch lost the lease after it read the schedules fires nothing, even an occurrence whose job is gone', async () => {
    const id = await insert({ cron: '* * * * *', next: T0, policy: 'fire_all' });
    now = T0 + 2 * MIN + 1;
    const stale = epoch;
    const base = store();
    // The deposed leader reads the due schedule, then stalls; meanwhile another leader fires
    // the occurrences and retention deletes their jobs.
    let resume!: () => void;
    const stalled = new Promise<void>((r) => (resume = r));
    let read!: () => void;
    const hasRead = new Promise<void>((r) => (read = r));
    const deposed = scheduler({
      leaderEpoch: () => stale,
      store: Object.assign(Object.create(base), {
        scheduleListDue: async (p: Parameters<ScheduleStore['scheduleListDue']>[0]) => {
          const due = await base.scheduleListDue(p);
          read();
          await stalled;
          return due;
        },
      }),
    });
    const late = deposed.tick();
    await hasRead;
    epoch = await takeLeaderLease(db.pool, { holder: 'the-new-leader' });
    expect((await scheduler().tick()).created).toBe(3);
    await db.query('DELETE FROM baton.jobs');
    resume();
    expect(await late).toEqual({ created: 0, disabled: 0, more: false });
    expect(await jobs()).toHaveLength(0);
    expect((await row(id)).next_fire_at.getTime()).toBe(T0 + 3 * MIN);
  });

  it('next_fire_at never moves backwards, and a stale ticker’s advance writes nothing', async () => {
    const id = await insert({ cron: '* * * * *', next: T0 });
    const st = store();
    const [s] = await st.scheduleListDue({ now: new Date(T0), limit: 10 });
    const at = (ms: number) => new Date(ms);
    // Forward from what was read: written.
    expect(
      await st.scheduleAdvanceMany([{ id, version: s!.version, expected: at(T0), next: at(T0 + 5 * MIN), lastFired: at(T0) }]),
    ).toEqual(new Set([id]));
    // The same read again (a ticker that lagged), even to a later time: nothing.
    expect(
      (await st.scheduleAdvanceMany([{ id, version: s!.version, expected: at(T0), next: at(T0 + 9 * MIN), lastFired: null }])).size,
    ).toBe(0);
    // Backwards from the current value: nothing.
    expect(
      (await st.scheduleAdvanceMany([{ id, version: s!.version, expected: at(T0 + 5 * MIN), next: at(T0 + MIN), lastFired: null }])).size,
    ).toBe(0);
    expect((await row(id)).next_fire_at.getTime()).toBe(T0 + 5 * MIN);
    // A ticker that read before an edit cannot write after it.
    await db.query('UPDATE baton.schedules SET version = version + 1 WHERE id = $1', [id]);
    expect(
      (await st.scheduleAdvanceMany([{ id, version: s!.version, expected: at(T0 + 5 * MIN), next: at(T0 + 6 * MIN), lastFired: null }]))
        .size,
    ).toBe(0);
    expect((await row(id)).next_fire_at.getTime()).toBe(T0 + 5 * MIN);
  });

  it('fires across a DST transition at the wall-clock times of the zone', async () => {
    // Europe/London, 2026-03-29: 01:30 does not exist; the occurrence fires once at 02:00 BST (01:00Z).
    const first = Date.parse('2026-03-28T01:30:00Z');
    await insert({ cron: '30 1 * * *', next: first, policy: 'fire_all' });
    now = Date.parse('2026-03-31T00:00:00Z');
    await scheduler().tick();
    expect((await jobs()).map((j) => j.run_at.toISOString())).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
  });

  it('a wildcard hour fires both passes of the repeated hour as two jobs keyed by their instants; a fixed hour fires once', async () => {
    // America/New_York, 2026-11-01: 01:00-01:59 happen twice (EDT, then EST).
    const dayStart = Date.parse('2026-11-01T04:00:00Z');
    const hourly = await insert({ name: 'hourly', cron: '0 * * * *', timezone: 'America/New_York', next: dayStart });
    const nightly = await insert({
      name: 'nightly',
      cron: '30 1 * * *',
      timezone: 'America/New_York',
      next: Date.parse('2026-11-01T05:30:00Z'),
    });
    const s = scheduler();
    // On time: the ticker wakes just after each of the day's 25 hours.
    for (let t = dayStart; t < Date.parse('2026-11-02T05:00:00Z'); t += 15 * MIN) {
      now = t + 1_000;
      await s.tick();
    }
    const keys = (id: string) => jobs().then((js) => js.filter((j) => j.idempotency_key.startsWith(`cron:${id}:`)));
    const fired = await keys(hourly);
    expect(fired).toHaveLength(25);
    expect(new Set(fired.map((j) => j.idempotency_key)).size).toBe(25);
    expect(fired.map((j) => j.idempotency_key)).toEqual(
      expect.arrayContaining([`cron:${hourly}:2026-11-01T05:00:00.000Z`, `cron:${hourly}:2026-11-01T06:00:00.000Z`]),
    );
    expect((await keys(nightly)).map((j) => j.run_at.toISOString())).toEqual(['2026-11-01T05:30:00.000Z']);
    expect(s.misfires).toEqual([]);
    // A cluster that was down all day catches up the same 25 occurrences under fire_all, and no more.
    await db.query('TRUNCATE baton.schedules');
    await db.query('DELETE FROM baton.jobs');
    const again = await insert({ name: 'hourly', cron: '0 * * * *', timezone: 'America/New_York', next: dayStart, policy: 'fire_all' });
    now = Date.parse('2026-11-02T04:30:00Z');
    await scheduler().tick();
    const caught = await keys(again);
    expect(caught).toHaveLength(25);
    expect(caught.slice(1).every((j, i) => j.run_at.getTime() - caught[i]!.run_at.getTime() === 60 * MIN)).toBe(true);
    expect((await row(again)).next_fire_at.toISOString()).toBe('2026-11-02T05:00:00.000Z');
  });
});

/** Every whole second in [from, to]. */
function range(from: number, to: number): number[] {
  const out: number[] = [];
  for (let t = Math.ceil(from / 1000) * 1000; t <= to; t += 1000) out.push(t);
  return out;
}
