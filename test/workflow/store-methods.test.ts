// The workflow store's methods one by one on a real database, below the engine: what each
// answers and the rows it writes, and that a lease that was taken over writes nothing.

import { beforeEach, describe, expect, it } from 'vitest';
import type { PgWorkflowStore } from '../../src/db/pg/workflow-store.ts';
import type { RunForAction, RunLease } from '../../src/driver/workflow-store.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { claimedRun as claimedRunOf, claimJob, freshStore } from './store-harness.ts';

const db = useTestDatabase();

const NO_RUN = '999999999';

describe('workflow store methods', () => {
  let store: PgWorkflowStore;

  beforeEach(async () => {
    store = await freshStore(db);
  });

  const claimedRun = () => claimedRunOf(db, store);
  const claim = (jobId: string) => claimJob(db, jobId);

  const start = async (p: { name?: string; tenantId?: string; parentRunId?: string } = {}) =>
    (
      await store.workflowStartRun({
        name: p.name ?? 'w',
        tenantId: p.tenantId ?? 'default',
        input: '{}',
        idempotencyKey: null,
        queue: 'q',
        jobType: `workflow:${p.name ?? 'w'}`,
        maxAttempts: 5,
        parentRunId: p.parentRunId ?? null,
      })
    ).run;

  const runRow = async (runId: string) =>
    (
      await db.query(
        'SELECT state, wait_event, wake_at, progress, replay_count, finished_at, job_id::text FROM baton.workflow_runs WHERE id = $1',
        [runId],
      )
    ).rows[0];
  const stepRow = async (runId: string, name: string) =>
    (
      await db.query('SELECT kind, status, output, error, attempts, seq FROM baton.workflow_steps WHERE run_id = $1 AND name = $2', [
        runId,
        name,
      ])
    ).rows[0];
  const jobRow = async (jobId: string) =>
    (
      await db.query(
        `SELECT state, queue, job_type, payload, attempt, max_attempts, replay_count, dead_letter_reason, has_dependents,
           run_at, run_at <= now() AS due FROM baton.jobs WHERE id = $1`,
        [jobId],
      )
    ).rows[0];
  const events = async (runId: string) =>
    (await db.query('SELECT id::text, name, payload, consumed_by FROM baton.workflow_events WHERE run_id = $1 ORDER BY id', [runId])).rows;
  const deadLetter = (jobId: string, error = { name: 'Boom', message: 'it broke' }) =>
    db.query(
      `UPDATE baton.jobs SET state = 'dead_lettered', dead_letter_reason = 'max_attempts', last_error = $2::jsonb,
         lease_owner = NULL, lease_expires_at = NULL, finished_at = now() WHERE id = $1`,
      [jobId, JSON.stringify(error)],
    );

  /** Arms a wait of `kind` named `name` at seq `seq` (an event wait without a timeout, the others a minute long). */
  const arm = (lease: RunLease, name: string, kind: 'event' | 'children' | 'sleep', waitEvent: string | null = null, seq = 0) =>
    store.workflowArmWait({
      ...lease,
      name,
      occurrence: 1,
      seq,
      kind,
      wait: waitEvent === null ? null : { names: [waitEvent], match: null },
      delayMs: kind === 'event' ? null : 60_000,
      until: null,
    });

  /** Arms a wait of `kind` named `name` at seq `seq` and suspends the run there: its job is given back. */
  const suspendAt = async (lease: RunLease, name: string, seq: number, kind: 'event' | 'children', waitEvent: string | null) => {
    const armed = await arm(lease, name, kind, waitEvent, seq);
    expect(armed).toMatchObject({ ok: true, status: 'waiting', due: false });
    expect(await store.workflowSuspend({ ...lease, steps: [{ name, occurrence: 1 }], state: 'waiting', waitEvent })).toMatchObject({
      ok: true,
      due: false,
    });
  };

  describe('workflowLoad', () => {
    it('under the current lease takes a waiting run back to running and answers it as it was, with its history', async () => {
      const first = await claimedRun();
      await store.workflowCommitStep({ ...first, name: 'a', occurrence: 1, seq: 0, output: '"A"', startedAt: new Date() });
      await suspendAt(first, 'e', 1, 'event', 'go');
      await store.workflowSendEvent({ runId: first.runId, name: 'go', payload: '1', idempotencyKey: null });
      const lease = { ...first, token: await claim(first.jobId) };

      const loaded = await store.workflowLoad(lease);
      expect(loaded).toMatchObject({
        marked: true,
        id: lease.runId,
        name: 'w',
        tenantId: 'default',
        input: {},
        state: 'waiting',
        jobId: lease.jobId,
        waitEvent: 'go',
        parentRunId: null,
        eventReady: true,
        steps: [
          { name: 'a', occurrence: 1, seq: 0, kind: 'step', status: 'succeeded', output: 'A', attempts: 1 },
          { name: 'e', occurrence: 1, seq: 1, kind: 'event', status: 'waiting', output: null, attempts: 0 },
        ],
      });
      expect(Math.abs((loaded?.nowMs ?? 0) - Date.now())).toBeLessThan(60_000);
      expect(await runRow(lease.runId)).toMatchObject({ state: 'running', wait_event: null, wake_at: null });
    });

    it('under a lease that was taken over answers the run unmarked and leaves it waiting', async () => {
      const stale = await claimedRun();
      await suspendAt(stale, 'e', 0, 'event', 'go');
      await claim(stale.jobId);
      expect(await store.workflowLoad(stale)).toMatchObject({ marked: false, state: 'waiting', waitEvent: 'go', eventReady: false });
      expect(await runRow(stale.runId)).toMatchObject({ state: 'waiting', wait_event: 'go' });
    });

    it('answers null for a run that does not exist', async () => {
      const lease = await claimedRun();
      expect(await store.workflowLoad({ ...lease, runId: NO_RUN })).toBeNull();
    });
  });

  describe('workflowFailStep', () => {
    it('records a failed attempt, counts a repeat, and leaves progress alone; a later commit takes the row over', async () => {
      const lease = await claimedRun();
      const fail = (message: string) =>
        store.workflowFailStep({ ...lease, name: 's', occurrence: 1, seq: 0, error: { name: 'Boom', message }, startedAt: new Date() });
      await fail('first');
      expect(await stepRow(lease.runId, 's')).toMatchObject({
        kind: 'step',
        status: 'failed',
        output: null,
        error: { name: 'Boom', message: 'first' },
        attempts: 1,
      });
      await fail('second');
      expect(await stepRow(lease.runId, 's')).toMatchObject({ status: 'failed', error: { name: 'Boom', message: 'second' }, attempts: 2 });
      expect((await runRow(lease.runId)).progress).toBe(0);

      const won = await store.workflowCommitStep({ ...lease, name: 's', occurrence: 1, seq: 0, output: '7', startedAt: new Date() });
      expect(won).toEqual({ ok: true, won: true, output: 7 });
      expect(await stepRow(lease.runId, 's')).toMatchObject({ status: 'succeeded', output: 7, attempts: 3 });
    });

    it('does not turn a succeeded step back into a failed one', async () => {
      const lease = await claimedRun();
      await store.workflowCommitStep({ ...lease, name: 's', occurrence: 1, seq: 0, output: '1', startedAt: new Date() });
      await store.workflowFailStep({ ...lease, name: 's', occurrence: 1, seq: 0, error: { name: 'Late' }, startedAt: new Date() });
      expect(await stepRow(lease.runId, 's')).toMatchObject({ status: 'succeeded', output: 1, error: null, attempts: 1 });
    });

    it('under a lease that was taken over writes nothing', async () => {
      const stale = await claimedRun();
      await claim(stale.jobId);
      await store.workflowFailStep({ ...stale, name: 's', occurrence: 1, seq: 0, error: { name: 'Boom' }, startedAt: new Date() });
      expect(await stepRow(stale.runId, 's')).toBeUndefined();
    });
  });

  describe('workflowFinishWait', () => {
    it('an event wait is not done until an event comes; then it consumes the oldest one and advances progress', async () => {
      const lease = await claimedRun();
      const wait = { ...lease, name: 'e', occurrence: 1, stepKey: 'e' };
      await arm(lease, 'e', 'event', 'go');
      expect(await store.workflowFinishWait(wait)).toEqual({ ok: true, done: false, output: null });
      expect(await stepRow(lease.runId, 'e')).toMatchObject({ status: 'waiting', attempts: 0 });

      await store.workflowSendEvent({ runId: lease.runId, name: 'go', payload: '{"n":1}', idempotencyKey: null });
      await store.workflowSendEvent({ runId: lease.runId, name: 'go', payload: '{"n":2}', idempotencyKey: null });
      expect(await store.workflowFinishWait(wait)).toEqual({ ok: true, done: true, output: { name: 'go', payload: { n: 1 } } });
      expect(await stepRow(lease.runId, 'e')).toMatchObject({
        status: 'succeeded',
        output: { name: 'go', payload: { n: 1 } },
        attempts: 1,
      });
      expect((await events(lease.runId)).map((e) => e.consumed_by)).toEqual(['e', null]);
      expect((await runRow(lease.runId)).progress).toBe(1);

      // Over once: a second finish consumes nothing more.
      expect(await store.workflowFinishWait(wait)).toEqual({ ok: true, done: false, output: null });
      expect((await events(lease.runId)).map((e) => e.consumed_by)).toEqual(['e', null]);
    });

    it('a sleep is done once its wake-up time has passed (output null), not before', async () => {
      const lease = await claimedRun();
      const arm = (name: string, seq: number, delayMs: number | null, until: Date | null) =>
        store.workflowArmWait({ ...lease, name, occurrence: 1, seq, kind: 'sleep', wait: null, delayMs, until });
      await arm('later', 0, 60_000, null);
      await arm('past', 1, null, new Date('2000-01-01T00:00:00Z'));
      const finish = (name: string) => store.workflowFinishWait({ ...lease, name, occurrence: 1, stepKey: name });
      expect(await finish('later')).toEqual({ ok: true, done: false, output: null });
      expect(await stepRow(lease.runId, 'later')).toMatchObject({ status: 'waiting' });
      expect(await finish('past')).toEqual({ ok: true, done: true, output: null });
      expect(await stepRow(lease.runId, 'past')).toMatchObject({ kind: 'sleep', status: 'succeeded', output: null, attempts: 1 });
      expect((await runRow(lease.runId)).progress).toBe(2);
    });

    it('under a lease that was taken over answers fenced and consumes nothing', async () => {
      const stale = await claimedRun();
      await arm(stale, 'e', 'event', 'go');
      await store.workflowSendEvent({ runId: stale.runId, name: 'go', payload: '1', idempotencyKey: null });
      await claim(stale.jobId);
      expect(await store.workflowFinishWait({ ...stale, name: 'e', occurrence: 1, stepKey: 'e' })).toEqual({ ok: false });
      expect(await stepRow(stale.runId, 'e')).toMatchObject({ status: 'waiting', output: null, attempts: 0 });
      expect((await events(stale.runId)).map((e) => e.consumed_by)).toEqual([null]);
      expect((await runRow(stale.runId)).progress).toBe(0);
    });
  });

  describe('workflowCompleteWait', () => {
    it('ends a waiting step with the given output once; a second completion changes nothing', async () => {
      const lease = await claimedRun();
      await arm(lease, 'j', 'children');
      const complete = (output: string) => store.workflowCompleteWait({ ...lease, name: 'j', occurrence: 1, output });
      expect(await complete('[{"x":1}]')).toEqual({ ok: true, done: true, output: [{ x: 1 }] });
      expect(await stepRow(lease.runId, 'j')).toMatchObject({ kind: 'children', status: 'succeeded', output: [{ x: 1 }], attempts: 1 });
      expect((await runRow(lease.runId)).progress).toBe(1);
      expect(await complete('[{"x":2}]')).toEqual({ ok: true, done: false, output: null });
      expect(await stepRow(lease.runId, 'j')).toMatchObject({ status: 'succeeded', output: [{ x: 1 }], attempts: 1 });
    });

    it('under a lease that was taken over answers fenced and leaves the step waiting', async () => {
      const stale = await claimedRun();
      await arm(stale, 'j', 'children');
      await claim(stale.jobId);
      expect(await store.workflowCompleteWait({ ...stale, name: 'j', occurrence: 1, output: '[]' })).toEqual({ ok: false });
      expect(await stepRow(stale.runId, 'j')).toMatchObject({ status: 'waiting', output: null, attempts: 0 });
      expect((await runRow(stale.runId)).progress).toBe(0);
    });
  });

  describe('workflowChildOutcomes', () => {
    it('answers each child run asked for with the state a reader sees, its output and its job’s last error', async () => {
      const parent = await claimedRun();
      const done = await start({ parentRunId: parent.runId });
      const doneLease = { runId: done.id, jobId: done.jobId as string, token: await claim(done.jobId as string) };
      await store.workflowCompleteRun({ ...doneLease, output: '{"ok":true}' });
      const dead = await start({ parentRunId: parent.runId });
      await deadLetter(dead.jobId as string);
      const live = await start({ parentRunId: parent.runId });

      const out = await store.workflowChildOutcomes({ runIds: [done.id, dead.id, live.id, NO_RUN] });
      expect([...out].sort((a, b) => Number(a.id) - Number(b.id))).toEqual([
        { id: done.id, state: 'succeeded', output: { ok: true }, lastError: null },
        { id: dead.id, state: 'dead_lettered', output: null, lastError: { name: 'Boom', message: 'it broke' } },
        { id: live.id, state: 'running', output: null, lastError: null },
      ]);
    });
  });

  describe('workflowJobOutcomes', () => {
    it('answers each plain job asked for with its state, result and last error', async () => {
      const ins = await db.query(
        `INSERT INTO baton.jobs (queue, job_type, state, result, finished_at) VALUES
           ('p', 'plain', 'succeeded', '{"v":1}', now()), ('p', 'plain', 'pending', NULL, NULL), ('p', 'plain', 'pending', NULL, NULL)
         RETURNING id::text AS id`,
      );
      const [ok, pending, dead] = ins.rows.map((r) => r.id as string) as [string, string, string];
      await deadLetter(dead, { name: 'Nope', message: 'no' });

      const out = await store.workflowJobOutcomes({ jobIds: [ok, pending, dead, NO_RUN] });
      expect([...out].sort((a, b) => Number(a.id) - Number(b.id))).toEqual([
        { id: ok, state: 'succeeded', result: { v: 1 }, lastError: null },
        { id: pending, state: 'pending', result: null, lastError: null },
        { id: dead, state: 'dead_lettered', result: null, lastError: { name: 'Nope', message: 'no' } },
      ]);
    });
  });

  describe('workflowLinkChildJobs', () => {
    it('links plain jobs once and marks them, so that one finishing makes the waiting run due', async () => {
      const lease = await claimedRun();
      await suspendAt(lease, 'all:join', 0, 'children', null);
      const ins = await db.query(`INSERT INTO baton.jobs (queue, job_type) VALUES ('p', 'plain'), ('p', 'plain') RETURNING id::text AS id`);
      const jobIds = ins.rows.map((r) => r.id as string);

      await store.workflowLinkChildJobs({ runId: lease.runId, jobIds, channel: 'baton_q' });
      await store.workflowLinkChildJobs({ runId: lease.runId, jobIds, channel: 'baton_q' });
      const links = await db.query('SELECT run_id::text, job_id::text, channel FROM baton.workflow_child_jobs ORDER BY job_id');
      expect(links.rows).toEqual(jobIds.map((job_id) => ({ run_id: lease.runId, job_id, channel: 'baton_q' })));
      for (const id of jobIds) expect((await jobRow(id)).has_dependents).toBe(true);

      expect((await jobRow(lease.jobId)).due).toBe(false);
      await db.query(`UPDATE baton.jobs SET state = 'succeeded', finished_at = now() WHERE id = $1`, [jobIds[0]]);
      expect(await jobRow(lease.jobId)).toMatchObject({ state: 'pending', due: true });
    });
  });

  describe('workflowWakeParent', () => {
    it('makes a waiting parent’s job due now and answers its queue, once', async () => {
      const parent = await claimedRun();
      await suspendAt(parent, 'all:join', 0, 'children', null);
      const child = await start({ parentRunId: parent.runId });
      expect((await jobRow(parent.jobId)).due).toBe(false);

      expect(await store.workflowWakeParent({ runId: child.id })).toBe('q');
      expect(await jobRow(parent.jobId)).toMatchObject({ state: 'pending', due: true });
      expect(await store.workflowWakeParent({ runId: child.id })).toBeNull();
    });

    it('answers null and writes nothing for a run without a parent or with a parent that is not waiting', async () => {
      const running = await claimedRun();
      const runningChild = await start({ parentRunId: running.runId });
      const sleeping = await claimedRun();
      await arm(sleeping, 'z', 'sleep');
      await store.workflowSuspend({ ...sleeping, steps: [{ name: 'z', occurrence: 1 }], state: 'sleeping', waitEvent: null });
      const sleepingChild = await start({ parentRunId: sleeping.runId });
      const before = [await jobRow(running.jobId), await jobRow(sleeping.jobId)];
      expect(before[1]).toMatchObject({ state: 'pending', due: false });

      expect(await store.workflowWakeParent({ runId: runningChild.id })).toBeNull();
      expect(await store.workflowWakeParent({ runId: sleepingChild.id })).toBeNull();
      expect(await store.workflowWakeParent({ runId: running.runId })).toBeNull();
      expect([await jobRow(running.jobId), await jobRow(sleeping.jobId)]).toEqual(before);
    });
  });

  describe('workflowWakeRun', () => {
    it('makes a suspended run’s pending job due now and answers its queue, once', async () => {
      const lease = await claimedRun();
      await suspendAt(lease, 'e', 0, 'event', 'go');
      expect(await jobRow(lease.jobId)).toMatchObject({ state: 'pending', due: false });
      expect(await store.workflowWakeRun({ jobId: lease.jobId })).toBe('q');
      expect(await jobRow(lease.jobId)).toMatchObject({ state: 'pending', due: true });
      expect(await store.workflowWakeRun({ jobId: lease.jobId })).toBeNull();
    });

    it('answers null and leaves a leased job alone', async () => {
      const lease = await claimedRun();
      const before = await jobRow(lease.jobId);
      expect(await store.workflowWakeRun({ jobId: lease.jobId })).toBeNull();
      expect(await jobRow(lease.jobId)).toEqual(before);
    });
  });

  describe('workflowSendEvent', () => {
    it('stores an event and wakes a run waiting for it; a repeated key answers the first event and wakes nobody', async () => {
      const lease = await claimedRun();
      await suspendAt(lease, 'e', 0, 'event', 'go');
      const sent = await store.workflowSendEvent({ runId: lease.runId, name: 'go', payload: '{"a":1}', idempotencyKey: 'k' });
      expect(sent).toEqual({ eventId: expect.any(String), duplicate: false, wokeQueue: 'q' });
      expect(await jobRow(lease.jobId)).toMatchObject({ state: 'pending', due: true });
      const again = await store.workflowSendEvent({ runId: lease.runId, name: 'go', payload: '{"a":2}', idempotencyKey: 'k' });
      expect(again).toEqual({ eventId: (sent as { eventId: string }).eventId, duplicate: true, wokeQueue: null });
      expect(await events(lease.runId)).toEqual([
        { id: (sent as { eventId: string }).eventId, name: 'go', payload: { a: 1 }, consumed_by: null },
      ]);
    });

    it('stores an event of another name without waking the run', async () => {
      const lease = await claimedRun();
      await suspendAt(lease, 'e', 0, 'event', 'go');
      const sent = await store.workflowSendEvent({ runId: lease.runId, name: 'other', payload: 'null', idempotencyKey: null });
      expect(sent).toMatchObject({ duplicate: false, wokeQueue: null });
      expect(await jobRow(lease.jobId)).toMatchObject({ state: 'pending', due: false });
      expect((await events(lease.runId)).map((e) => e.name)).toEqual(['other']);
    });

    it('refuses a finished run with its state (a repeated key is still a duplicate) and answers null for no run', async () => {
      const lease = await claimedRun();
      const first = await store.workflowSendEvent({ runId: lease.runId, name: 'go', payload: '1', idempotencyKey: 'k' });
      await store.workflowCompleteRun({ ...lease, output: '"done"' });
      expect(await store.workflowSendEvent({ runId: lease.runId, name: 'go', payload: '2', idempotencyKey: 'k2' })).toEqual({
        conflict: 'succeeded',
      });
      expect(await store.workflowSendEvent({ runId: lease.runId, name: 'go', payload: '3', idempotencyKey: null })).toEqual({
        conflict: 'succeeded',
      });
      expect(await store.workflowSendEvent({ runId: lease.runId, name: 'go', payload: '1', idempotencyKey: 'k' })).toEqual({
        eventId: (first as { eventId: string }).eventId,
        duplicate: true,
        wokeQueue: null,
      });
      expect((await events(lease.runId)).map((e) => e.payload)).toEqual([1]);
      expect(await store.workflowSendEvent({ runId: NO_RUN, name: 'go', payload: '1', idempotencyKey: null })).toBeNull();
    });
  });

  describe('workflowReplayRun', () => {
    const replay = (runId: string, allowed: (r: RunForAction) => boolean) =>
      store.workflowReplayRun({
        runId,
        allowed,
        jobType: (name) => `workflow:${name}:new`,
        queue: () => 'q2',
        maxAttempts: () => 7,
      });

    it('restarts a dead-lettered run on its own job, keeping its completed steps', async () => {
      const lease = await claimedRun();
      await store.workflowCommitStep({ ...lease, name: 'a', occurrence: 1, seq: 0, output: '1', startedAt: new Date() });
      await deadLetter(lease.jobId);
      const seen: RunForAction[] = [];
      const res = await replay(lease.runId, (r) => {
        seen.push(r);
        return true;
      });
      expect(seen).toEqual([expect.objectContaining({ state: 'dead_lettered', jobId: lease.jobId, jobState: 'dead_lettered' })]);
      expect(res).toMatchObject({
        queue: 'q',
        run: { id: lease.runId, state: 'running', jobId: lease.jobId, replayCount: 1, progress: 1 },
      });
      expect(await runRow(lease.runId)).toMatchObject({ state: 'running', replay_count: 1, finished_at: null, job_id: lease.jobId });
      expect(await jobRow(lease.jobId)).toMatchObject({
        state: 'pending',
        attempt: 0,
        replay_count: 1,
        dead_letter_reason: null,
        due: true,
      });
      expect(await stepRow(lease.runId, 'a')).toMatchObject({ status: 'succeeded', output: 1 });
    });

    it('gives a run whose driving job is gone a new job from the callbacks', async () => {
      const lease = await claimedRun();
      await db.query('DELETE FROM baton.jobs WHERE id = $1', [lease.jobId]);
      await db.query(`UPDATE baton.workflow_runs SET state = 'cancelled', finished_at = now() WHERE id = $1`, [lease.runId]);
      const res = await replay(lease.runId, (r) => r.state === 'cancelled' && r.jobState === null);
      expect(res).toMatchObject({ queue: 'q2', run: { state: 'running', replayCount: 1 } });
      const jobId = (res as { run: { jobId: string } }).run.jobId;
      expect(jobId).not.toBe(lease.jobId);
      expect(await runRow(lease.runId)).toMatchObject({ state: 'running', job_id: jobId, finished_at: null });
      expect(await jobRow(jobId)).toMatchObject({
        state: 'pending',
        queue: 'q2',
        job_type: 'workflow:w:new',
        max_attempts: 7,
        payload: { runId: lease.runId },
      });
    });

    it('the registry answers what an engine registered last, and null for a name never registered', async () => {
      expect(await store.workflowDefinition('never')).toBeNull();
      await store.workflowRegister([{ name: 'reg', queue: 'first-q', maxAttempts: 3, runTimeoutMs: null }]);
      await store.workflowRegister([{ name: 'reg', queue: 'second-q', maxAttempts: 6, runTimeoutMs: 90_000 }]);
      expect(await store.workflowDefinition('reg')).toMatchObject({ queue: 'second-q', maxAttempts: 6, runTimeoutMs: 90_000 });
      await db.query('TRUNCATE baton.workflow_definitions');
    });

    it("takes the new job's queue and budget from the registry when the replaying process does not define the workflow", async () => {
      await store.workflowRegister([{ name: 'w', queue: 'registered-q', maxAttempts: 4, runTimeoutMs: null }]);
      const lease = await claimedRun();
      await db.query('DELETE FROM baton.jobs WHERE id = $1', [lease.jobId]);
      await db.query(`UPDATE baton.workflow_runs SET state = 'cancelled', finished_at = now() WHERE id = $1`, [lease.runId]);
      const res = await store.workflowReplayRun({
        runId: lease.runId,
        allowed: () => true,
        jobType: (name) => `workflow:${name}`,
        queue: () => undefined,
        maxAttempts: () => undefined,
      });
      expect(res).toMatchObject({ queue: 'registered-q' });
      expect(await jobRow((res as { run: { jobId: string } }).run.jobId)).toMatchObject({ queue: 'registered-q', max_attempts: 4 });
      await db.query('TRUNCATE baton.workflow_definitions');
    });

    it('answers the conflict and writes nothing when not allowed, and null for no run', async () => {
      const lease = await claimedRun();
      const [runBefore, jobBefore] = [await runRow(lease.runId), await jobRow(lease.jobId)];
      expect(await replay(lease.runId, () => false)).toEqual({ conflict: 'running' });
      expect(await runRow(lease.runId)).toEqual(runBefore);
      expect(await jobRow(lease.jobId)).toEqual(jobBefore);
      expect(await replay(NO_RUN, () => true)).toBeNull();
    });
  });

  describe('workflowListRuns and workflowCountRunsByState', () => {
    it('lists runs newest first, filtered by name, reader state and tenant, paged by limit and offset', async () => {
      const r1 = await start({ name: 'a', tenantId: 't1' });
      const r2 = await start({ name: 'b', tenantId: 't1' });
      const r3 = await start({ name: 'a', tenantId: 't2' });
      const r4 = await start({ name: 'a', tenantId: 't1' });
      await deadLetter(r4.jobId as string);
      const list = async (f: { name?: string; state?: 'running' | 'dead_lettered'; tenantId?: string }, limit = 10, offset = 0) =>
        (await store.workflowListRuns({ ...f, limit, offset })).map((r) => r.id);

      expect(await list({})).toEqual([r4.id, r3.id, r2.id, r1.id]);
      expect(await list({ name: 'a' })).toEqual([r4.id, r3.id, r1.id]);
      expect(await list({ state: 'dead_lettered' })).toEqual([r4.id]);
      expect(await list({ state: 'running' })).toEqual([r3.id, r2.id, r1.id]);
      expect(await list({ tenantId: 't2' })).toEqual([r3.id]);
      expect(await list({ name: 'a', tenantId: 't1', state: 'running' })).toEqual([r1.id]);
      expect(await list({}, 2, 1)).toEqual([r3.id, r2.id]);
      const [top] = await store.workflowListRuns({ limit: 1, offset: 0 });
      expect(top).toMatchObject({ id: r4.id, name: 'a', tenantId: 't1', state: 'dead_lettered', jobId: r4.jobId, progress: 0 });
    });

    it('counts runs per workflow and the state a reader sees', async () => {
      await start({ name: 'a' });
      await start({ name: 'a' });
      const dead = await start({ name: 'a' });
      await deadLetter(dead.jobId as string);
      const done = await start({ name: 'b' });
      await db.query(`UPDATE baton.workflow_runs SET state = 'succeeded', finished_at = now() WHERE id = $1`, [done.id]);
      const jobCancelled = await start({ name: 'b' });
      await db.query(`UPDATE baton.jobs SET state = 'cancelled', finished_at = now() WHERE id = $1`, [jobCancelled.jobId]);

      const counts = await store.workflowCountRunsByState();
      expect([...counts].sort((x, y) => `${x.name}${x.state}`.localeCompare(`${y.name}${y.state}`))).toEqual([
        { name: 'a', state: 'dead_lettered', n: 1 },
        { name: 'a', state: 'running', n: 2 },
        { name: 'b', state: 'cancelled', n: 1 },
        { name: 'b', state: 'succeeded', n: 1 },
      ]);
    });
  });
});
