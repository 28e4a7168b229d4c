// Cron through the public API on a real PostgreSQL: baton.cron (upsert / get / list /
// pause / resume / remove / preview), declarative schedules reconciled at start(), a
// started engine firing occurrences as jobs its workers run, a schedule made in another
// process waking the ticker by NOTIFY, and the leader's death handing ticking over.

import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Baton, isBatonError, type Schedule } from '../../src/index.ts';
import { useEngines } from '../engine/harness.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { terminateLeaderPresence } from '../helpers/leader.ts';
import { waitFor } from '../helpers/wait.ts';

const db = useTestDatabase();

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (err) {
    return isBatonError(err) ? err.code : String(err);
  }
  return undefined;
}
const input = { name: 'nightly', cron: '30 2 * * *', timezone: 'Europe/London', jobType: 'report', queue: 'q' };
/** Occurrence instants (ms) of a schedule's jobs, in order. */
const fired = async (id: string) =>
  (
    await db.query<{ run_at: Date }>(`SELECT run_at FROM baton.jobs WHERE idempotency_key LIKE $1 ORDER BY run_at`, [`cron:${id}:%`])
  ).rows.map((r) => r.run_at.getTime());

describe('baton.cron', () => {
  const engines = useEngines(db);
  beforeEach(async () => {
    await db.query('TRUNCATE baton.schedules');
  });

  it('creates, reads, lists, edits, pauses, resumes and removes schedules', async () => {
    const b = engines.producer();
    const { schedule: s, created } = await b.cron.upsert({ ...input, payload: { to: 'ops' }, misfirePolicy: 'fire_all', catchUpLimit: 7 });
    expect(created).toBe(true);
    expect(s).toMatchObject({ tenantId: 'default', name: 'nightly', status: 'enabled', misfirePolicy: 'fire_all', catchUpLimit: 7 });
    expect(s.nextFireAt!.getTime()).toBeGreaterThan(Date.now());
    // The next fire time is 02:30 London time.
    expect(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/London', timeStyle: 'short' }).format(s.nextFireAt!)).toBe('02:30');

    const again = await b.cron.upsert({ ...input, payload: { to: 'ops' }, misfirePolicy: 'fire_all', catchUpLimit: 7 });
    expect(again.created).toBe(false);
    expect(again.schedule.version).toBe(s.version);
    const edited = await b.cron.upsert({ ...input, payload: { to: 'dev' } });
    expect(edited.schedule.version).not.toBe(s.version);
    expect(edited.schedule.nextFireAt).toEqual(s.nextFireAt);

    expect((await b.cron.get(s.id)).payload).toEqual({ to: 'dev' });
    await b.cron.upsert({ ...input, name: 'other', tenantId: 'acme' });
    expect((await b.cron.list()).map((x) => `${x.tenantId}/${x.name}`)).toEqual(['acme/other', 'default/nightly']);
    expect((await b.cron.list({ tenantId: 'acme' })).map((x) => x.name)).toEqual(['other']);

    const paused = await b.cron.pause(s.id);
    expect(paused).toMatchObject({ status: 'paused', nextFireAt: null, disabledReason: null });
    const resumed = await b.cron.resume(s.id);
    expect(resumed.status).toBe('enabled');
    expect(resumed.nextFireAt).toEqual(s.nextFireAt);
    const hourly = await b.cron.update(s.id, { cron: '0 * * * *' });
    expect(hourly.nextFireAt!.getTime() - Date.now()).toBeLessThanOrEqual(3_600_000);

    await b.cron.remove(s.id);
    expect(await codeOf(b.cron.get(s.id))).toBe('SCHEDULE_NOT_FOUND');
    expect(await codeOf(b.cron.remove(s.id))).toBe('SCHEDULE_NOT_FOUND');
    expect(await codeOf(b.cron.get('not-an-id'))).toBe('SCHEDULE_NOT_FOUND');
  });

  it('a disabled schedule fires again once an edit or a resume makes it valid; an edit keeps a pause', async () => {
    const b = engines.producer();
    const { schedule } = await b.cron.upsert(input);
    await db.query(`UPDATE baton.schedules SET enabled = false, disabled_reason = 'broken', next_fire_at = NULL WHERE id = $1`, [
      schedule.id,
    ]);
    expect(await b.cron.get(schedule.id)).toMatchObject({ status: 'disabled', disabledReason: 'broken' });
    const fixed = await b.cron.update(schedule.id, { cron: '45 2 * * *' });
    expect(fixed).toMatchObject({ status: 'enabled', disabledReason: null });
    expect(fixed.nextFireAt).not.toBeNull();
    await b.cron.pause(schedule.id);
    expect((await b.cron.update(schedule.id, { priority: 3 })).status).toBe('paused');
    await db.query(`UPDATE baton.schedules SET enabled = false, disabled_reason = 'broken' WHERE id = $1`, [schedule.id]);
    expect((await b.cron.resume(schedule.id)).status).toBe('enabled');
  });

  it('refuses bad input with stable codes and writes nothing', async () => {
    const b = engines.producer();
    expect(await codeOf(b.cron.upsert({ ...input, timezone: '+01:00' }))).toBe('INVALID_TIMEZONE');
    expect(await codeOf(b.cron.upsert({ ...input, timezone: 'Nowhere/Land' }))).toBe('INVALID_TIMEZONE');
    expect(await codeOf(b.cron.upsert({ ...input, cron: '0 0 * *' }))).toBe('INVALID_CRON_EXPRESSION');
    expect(await codeOf(b.cron.upsert({ ...input, cron: '0 0 30 2 *' }))).toBe('INVALID_CRON_EXPRESSION');
    expect(await codeOf(b.cron.upsert({ ...input, jobType: 'bad name' }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(b.cron.upsert({ ...input, misfirePolicy: 'sometimes' as never }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(b.cron.upsert({ ...input, payload: { s: 'a\u0000b' } }))).toBe('INVALID_ARGUMENT');
    expect(await b.cron.list()).toEqual([]);
  });

  it('previews the next fire instants in UTC and local time', () => {
    const b = engines.producer();
    expect(b.cron.preview({ cron: '30 1 * * *', timezone: 'Europe/London', count: 2, from: new Date('2026-03-28T12:00:00Z') })).toEqual([
      { utc: '2026-03-29T01:00:00.000Z', local: '2026-03-29T02:00:00+01:00' },
      { utc: '2026-03-30T00:30:00.000Z', local: '2026-03-30T01:30:00+01:00' },
    ]);
    expect(() => b.cron.preview({ cron: '* * * * *', timezone: 'UTC', count: 1000 })).toThrow(/count/);
  });

  it('reconciles declared schedules at start(): created or updated by name, others left alone unless pruned', async () => {
    const other = (await engines.producer().cron.upsert({ ...input, name: 'made-by-hand' })).schedule;
    const declared = [
      { ...input, name: 'a' },
      { ...input, name: 'b', cron: '0 * * * *' },
    ];
    const first = engines.create({ schedules: declared });
    await first.start();
    expect((await first.cron.list()).map((s) => s.name)).toEqual(['a', 'b', 'made-by-hand']);
    const b1 = (await first.cron.list()).find((s) => s.name === 'b') as Schedule;
    const second = engines.create({ schedules: [{ ...input, name: 'b', cron: '15 * * * *' }], pruneSchedules: true });
    await second.start();
    const after = await second.cron.list();
    expect(after.map((s) => s.name)).toEqual(['b']);
    expect(after[0]).toMatchObject({ id: b1.id, cron: '15 * * * *' });
    expect(await codeOf(second.cron.get(other.id))).toBe('SCHEDULE_NOT_FOUND');
  });

  it('refuses an invalid declared schedule at createBaton() with INVALID_CONFIG', () => {
    let code: string | undefined;
    try {
      engines.create({ schedules: [{ ...input, timezone: 'UTC+1' }] });
    } catch (err) {
      code = isBatonError(err) ? err.code : 'other';
    }
    expect(code).toBe('INVALID_CONFIG');
  });

  it('a started worker fires each occurrence as a job and runs it; a schedule made elsewhere wakes its ticker', async () => {
    const ran: Array<{ runAt: number; payload: unknown }> = [];
    const worker = await engines.start({
      queues: { q: 2 },
      handlers: { tick: async (ctx) => void ran.push({ runAt: ctx.job.runAt.getTime(), payload: ctx.payload }) },
    });
    await waitFor(() => worker.stats().leader, { message: 'the worker to lead' });
    // The ticker now sleeps with nothing scheduled (up to a minute): only the NOTIFY from the
    // other process's write can make the occurrences below fire in time.
    const { schedule } = await engines
      .producer()
      .cron.upsert({ ...input, name: 'every-second', cron: '* * * * * *', jobType: 'tick', payload: 1 });
    await waitFor(() => ran.length >= 3, { message: 'three occurrences to run', timeoutMs: 8_000 });
    const instants = await fired(schedule.id);
    expect(instants.every((t) => t % 1000 === 0)).toBe(true);
    expect(new Set(instants).size).toBe(instants.length);
    expect(ran[0]!.payload).toBe(1);
    expect(worker.stats().cron.fired).toBeGreaterThanOrEqual(3);
  });

  it('when the leader’s session dies, the second process fires the next occurrences', async () => {
    const opts = { queues: { q: 1 }, handlers: { tick: async () => undefined } };
    const a = await engines.start(opts);
    const b = await engines.start(opts);
    const leaders = (xs: Baton[]) => xs.filter((x) => x.stats().leader);
    const [leader] = await waitFor(() => (leaders([a, b]).length === 1 ? leaders([a, b]) : null), { message: 'one leader' });
    const follower = leader === a ? b : a;
    const { schedule } = await follower.cron.upsert({ ...input, name: 'every-second', cron: '* * * * * *', jobType: 'tick' });
    await waitFor(async () => (await fired(schedule.id)).length >= 2, { message: 'the leader to fire' });
    expect(follower.stats().cron.fired).toBe(0);
    expect(await terminateLeaderPresence(db.pool)).toBe(1);
    const killedAt = Date.now();
    await leader!.stop({ drainMs: 0 });
    await waitFor(() => follower.stats().cron.fired >= 2, { message: 'the new leader to fire occurrences' });
    const after = (await fired(schedule.id)).filter((t) => t > killedAt);
    expect(after.length).toBeGreaterThanOrEqual(2);
    // No occurrence twice, none skipped between the first and the last.
    const all = await fired(schedule.id);
    expect(all.slice(1).every((t, i) => t - all[i]! === 1000)).toBe(true);
  });

  describe('workflow targets', () => {
    beforeEach(async () => {
      await db.query('TRUNCATE baton.workflow_runs CASCADE');
      await db.query('TRUNCATE baton.workflow_definitions');
    });
    /** The runs a schedule started, by occurrence instant, in order. */
    const runsOf = async (id: string) =>
      (
        await db.query<{ id: string; key: string; state: string; output: unknown }>(
          'SELECT id::text, idempotency_key AS key, state, output FROM baton.workflow_runs WHERE idempotency_key LIKE $1 ORDER BY idempotency_key',
          [`cron:${id}:%`],
        )
      ).rows;
    const defineReport = (b: Baton) =>
      b.workflow<{ region: string }>('report', (ctx) => ctx.step('build', () => `report for ${ctx.input.region}`), { queue: 'wf' });

    it('each occurrence starts one run of the workflow, with the input, that the defining worker completes', async () => {
      const worker = engines.create({ queues: { wf: 2 } });
      defineReport(worker);
      await worker.start();
      await waitFor(() => worker.stats().leader, { message: 'the worker to lead' });
      // Made by a process that defines no workflow: the registry answers for the name.
      const { schedule } = await engines
        .producer()
        .cron.upsert({ name: 'reports', cron: '* * * * * *', timezone: 'UTC', workflow: 'report', input: { region: 'eu' } });
      expect(schedule).toMatchObject({ workflow: 'report', jobType: 'workflow:report', queue: 'wf', payload: { region: 'eu' } });
      const runs = await waitFor(
        async () => {
          const r = await runsOf(schedule.id);
          return r.filter((x) => x.state === 'succeeded').length >= 2 ? r : null;
        },
        { message: 'two scheduled runs to succeed', timeoutMs: 8_000 },
      );
      expect(runs.find((r) => r.state === 'succeeded')!.output).toBe('report for eu');
      expect(new Set(runs.map((r) => r.key)).size).toBe(runs.length);
      expect(worker.stats().cron.fired).toBeGreaterThanOrEqual(2);
      // No plain job carries the occurrence key: the run's driving job is keyed by the run.
      expect(await fired(schedule.id)).toEqual([]);
    });

    it('refuses an unknown workflow, a workflow:<name> jobType, and mixed targets, writing nothing', async () => {
      const producer = engines.producer();
      const base = { name: 'bad', cron: '* * * * *', timezone: 'UTC' };
      expect(await codeOf(producer.cron.upsert({ ...base, workflow: 'nope' }))).toBe('WORKFLOW_NOT_FOUND');
      const direct = await producer.cron.upsert({ ...base, jobType: 'workflow:report' }).catch((e: unknown) => e);
      expect(isBatonError(direct) && direct.code).toBe('INVALID_ARGUMENT');
      expect((direct as Error).message).toContain('{ workflow: "report", input }');
      const both = { ...base, workflow: 'report', jobType: 'x' } as unknown as Parameters<typeof producer.cron.upsert>[0];
      expect(await codeOf(producer.cron.upsert(both))).toBe('INVALID_ARGUMENT');
      const queued = { ...base, workflow: 'report', queue: 'q' } as unknown as Parameters<typeof producer.cron.upsert>[0];
      expect(await codeOf(producer.cron.upsert(queued))).toBe('INVALID_ARGUMENT');
      expect(await producer.cron.list()).toEqual([]);
      // An edit cannot turn a job schedule into workflow:<name> either, nor target an unknown workflow.
      const { schedule } = await producer.cron.upsert({ ...base, jobType: 'report' });
      expect(await codeOf(producer.cron.update(schedule.id, { jobType: 'workflow:report' }))).toBe('INVALID_ARGUMENT');
      expect(await codeOf(producer.cron.update(schedule.id, { workflow: 'nope' }))).toBe('WORKFLOW_NOT_FOUND');
    });

    it('a declared schedule may target a workflow its own process defines: the registry is written first', async () => {
      const worker = engines.create({
        queues: { wf: 1 },
        schedules: [{ name: 'declared', cron: '0 4 * * *', timezone: 'UTC', workflow: 'report', input: { region: 'd' } }],
      });
      defineReport(worker);
      await worker.start();
      const [s] = await worker.cron.list();
      expect(s).toMatchObject({ name: 'declared', workflow: 'report', queue: 'wf', payload: { region: 'd' } });
      // A declared jobType workflow:<name> is refused when the options are read.
      const bad = (() => {
        try {
          engines.create({ schedules: [{ name: 'x', cron: '0 4 * * *', timezone: 'UTC', jobType: 'workflow:report' }] });
        } catch (err) {
          return err;
        }
      })();
      expect(isBatonError(bad) && bad.code).toBe('INVALID_CONFIG');
    });

    it('a process that defines the workflow refuses a schedule whose input its schema refuses, writing nothing', async () => {
      const worker = engines.create({ queues: { wf: 1 } });
      worker.workflow('typed', () => 1, { queue: 'wf', input: z.object({ n: z.number() }) });
      let strict = false;
      const toggled = {
        parse: (v: unknown) => {
          if (strict) throw new Error('tightened');
          return v;
        },
      };
      worker.workflow('toggled', () => 1, { queue: 'wf', input: toggled });
      await worker.start();
      const base = { name: 'typed', cron: '0 * * * *', timezone: 'UTC', workflow: 'typed' };
      expect(await codeOf(worker.cron.upsert({ ...base, input: { n: 'x' } }))).toBe('INVALID_ARGUMENT');
      expect(await worker.cron.list()).toEqual([]);
      const { schedule } = await worker.cron.upsert({ ...base, input: { n: 1 } });
      expect(await codeOf(worker.cron.update(schedule.id, { input: { n: 'x' } }))).toBe('INVALID_ARGUMENT');
      expect((await worker.cron.get(schedule.id)).payload).toEqual({ n: 1 });
      // A schema tightened since the schedule was written: a pause or a timing edit still goes through.
      strict = true;
      const loose = await worker.cron.upsert({ ...base, name: 'loose', workflow: 'toggled', input: { n: 1 } }).catch((e: unknown) => e);
      expect(isBatonError(loose) && loose.code).toBe('INVALID_ARGUMENT');
      strict = false;
      const { schedule: s2 } = await worker.cron.upsert({ ...base, name: 'loose', workflow: 'toggled', input: { n: 1 } });
      strict = true;
      expect((await worker.cron.pause(s2.id)).status).toBe('paused');
      expect((await worker.cron.update(s2.id, { cron: '5 * * * *' })).cron).toBe('5 * * * *');
      expect(await codeOf(worker.cron.update(s2.id, { input: { n: 2 } }))).toBe('INVALID_ARGUMENT');
    });

    it('an edit switches a schedule between a job and a workflow target', async () => {
      const worker = engines.create({ queues: { wf: 1 } });
      defineReport(worker);
      await worker.start();
      const { schedule } = await worker.cron.upsert({ name: 'sw', cron: '0 * * * *', timezone: 'UTC', jobType: 'j', queue: 'q' });
      const asRun = await worker.cron.update(schedule.id, { workflow: 'report', input: { region: 'us' } });
      expect(asRun).toMatchObject({ workflow: 'report', jobType: 'workflow:report', queue: 'wf', payload: { region: 'us' }, priority: 0 });
      const newInput = await worker.cron.update(schedule.id, { input: { region: 'ap' } });
      expect(newInput).toMatchObject({ workflow: 'report', payload: { region: 'ap' } });
      const asJob = await worker.cron.update(schedule.id, { jobType: 'j2', payload: 7 });
      expect(asJob).toMatchObject({ workflow: null, jobType: 'j2', queue: 'default', payload: 7 });
    });

    it('when the leader dies, the new leader starts the next runs: one run per occurrence, none skipped', async () => {
      const opts = { queues: { wf: 1 } };
      const a = engines.create(opts);
      const b = engines.create(opts);
      defineReport(a);
      defineReport(b);
      await a.start();
      await b.start();
      const leaders = (xs: Baton[]) => xs.filter((x) => x.stats().leader);
      const [leader] = await waitFor(() => (leaders([a, b]).length === 1 ? leaders([a, b]) : null), { message: 'one leader' });
      const follower = leader === a ? b : a;
      const { schedule } = await follower.cron.upsert({
        name: 'every-second',
        cron: '* * * * * *',
        timezone: 'UTC',
        workflow: 'report',
        input: { region: 'x' },
      });
      await waitFor(async () => (await runsOf(schedule.id)).length >= 2, { message: 'the leader to start runs' });
      expect(await terminateLeaderPresence(db.pool)).toBe(1);
      await leader!.stop({ drainMs: 0 });
      const before = (await runsOf(schedule.id)).length;
      await waitFor(async () => (await runsOf(schedule.id)).length >= before + 2 && follower.stats().cron.fired >= 2, {
        message: 'the new leader to start runs',
      });
      const instants = (await runsOf(schedule.id)).map((r) => Date.parse(r.key.slice(`cron:${schedule.id}:`.length)));
      expect(instants.slice(1).every((t, i) => t - instants[i]! === 1000)).toBe(true);
    });
  });
});
