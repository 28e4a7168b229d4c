// Conformance of the wake-up NOTIFYs: carried by the insert statement, written behind an
// autocommit insert (notifyAfter), and a connection that dies under such an enqueue.

import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { channelFor } from '../../src/core/notifier.ts';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { waitFor } from '../helpers/wait.ts';
import { ex, expectBatonError, fresh, jobCount, newJob, useExecutorHarness } from './executor-harness.ts';

const db = useExecutorHarness();

describe('jobNotify', () => {
  it('notifies every channel given, in order and with an empty payload, and nothing for an empty list', async () => {
    const [a, b, c] = [fresh('n'), fresh('n'), fresh('n')].map((q) => channelFor('baton', q)) as [string, string, string];
    const listener = new pg.Client({ connectionString: db.url });
    const heard: Array<{ channel: string; payload: string | undefined }> = [];
    await listener.connect();
    try {
      listener.on('notification', (n) => heard.push({ channel: n.channel, payload: n.payload }));
      for (const channel of [a, b, c]) await listener.query(`LISTEN ${channel}`);
      await ex.jobNotify({ channels: [a, b] });
      await waitFor(() => heard.length >= 2, { message: 'the NOTIFYs on a and b' });
      await ex.jobNotify({ channels: [] });
      await ex.jobNotify({ channels: [c] });
      // Notifications arrive in commit order: one from the empty call would come before c's.
      await waitFor(() => heard.length >= 3, { message: 'the NOTIFY on c' });
      expect(heard).toEqual([a, b, c].map((channel) => ({ channel, payload: '' })));
    } finally {
      await listener.end();
    }
  });
});

describe('NOTIFY carried by the insert statement', () => {
  it('arrives with the commit of a statement that inserted, and not at all when every row was a duplicate', async () => {
    const queue = fresh();
    const channel = channelFor('baton', queue);
    const listener = new pg.Client({ connectionString: db.url });
    const heard: string[] = [];
    await listener.connect();
    try {
      listener.on('notification', (n) => heard.push(n.channel));
      await listener.query(`LISTEN ${channel}`);
      const [first] = await ex.jobInsertMany({ jobs: [newJob({ queue, idempotencyKey: 'n-1' })], notify: [channel] });
      expect(first!.created).toBe(true);
      await waitFor(() => heard.length === 1, { message: 'the NOTIFY of the first insert' });
      const [dup] = await ex.jobInsertMany({ jobs: [newJob({ queue, idempotencyKey: 'n-1' })], notify: [channel] });
      expect(dup).toMatchObject({ created: false, job: { id: first!.job.id } });
      await ex.jobInsertMany({ jobs: [newJob({ queue })], notify: [channel] });
      // Notifications arrive in commit order: once the third statement's is here, a NOTIFY from
      // the duplicate-only statement would have arrived before it.
      await waitFor(() => heard.length >= 2, { message: 'the NOTIFY of the third insert' });
      expect(heard).toEqual([channel, channel]);
      // Without channels, the insert sends nothing.
      await ex.jobInsertMany({ jobs: [newJob({ queue })] });
      await ex.jobInsertMany({ jobs: [newJob({ queue })], notify: [channel] });
      await waitFor(() => heard.length >= 3, { message: 'the NOTIFY of the fifth insert' });
      expect(heard).toHaveLength(3);
    } finally {
      await listener.end();
    }
  });
});

describe('NOTIFY written behind an autocommit insert (notifyAfter)', () => {
  // One connection, so every statement below shares it: a pipeline left out of step by a
  // failed statement would hand the next insert the wrong reply.
  describe.each([true, false])('pipeline %s', (pipeline) => {
    it('is heard only once the row is visible, and a failed insert leaves the connection in step', async () => {
      const pool = new pg.Pool({ connectionString: db.url, max: 1, pipeline });
      // pool.end() resolves before its socket closes; the file's DROP ... WITH (FORCE) may reach it.
      pool.on('error', () => undefined);
      const pex = new PgExecutor(pool, quoteSchema(db.schema));
      const listener = new pg.Client({ connectionString: db.url });
      const [bad, good] = [fresh('bad'), fresh('good')].map((q) => channelFor('baton', q)) as [string, string];
      // At each notification, whether the job it announces is visible from another session.
      const heard: Array<{ channel: string; visible: Promise<number> }> = [];
      let expectQueue = '';
      const notifyErrors: unknown[] = [];
      const onError = (err: unknown) => notifyErrors.push(err);
      await listener.connect();
      try {
        listener.on('notification', (n) =>
          heard.push({
            channel: n.channel,
            visible: db.pool.query('SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1', [expectQueue]).then((r) => r.rows[0].n),
          }),
        );
        await listener.query(`LISTEN ${bad}`);
        await listener.query(`LISTEN ${good}`);

        const before = await jobCount();
        await expectBatonError(
          pex.jobInsertMany({ jobs: [newJob({ payload: { s: 'a\u0000b' } })], notifyAfter: { channels: [bad], onError } }),
          'INVALID_ARGUMENT',
        );
        expect(await jobCount()).toBe(before);

        for (let i = 0; i < 3; i++) {
          expectQueue = fresh();
          const n = heard.filter((h) => h.channel === good).length;
          const [r] = await pex.jobInsertMany({ jobs: [newJob({ queue: expectQueue })], notifyAfter: { channels: [good], onError } });
          // The reply is this insert's own row, not a neighbour's in the pipeline.
          expect(r).toMatchObject({ created: true, job: { queue: expectQueue } });
          await waitFor(() => heard.filter((h) => h.channel === good).length === n + 1, { message: `the NOTIFY of insert ${i}` });
          expect(await heard.filter((h) => h.channel === good)[n]!.visible).toBe(1);
        }
        expect(notifyErrors).toEqual([]);
      } finally {
        await listener.end();
        await pool.end();
      }
    });

    it('answers after its NOTIFY: a failed NOTIFY is reported by then, keeps the job, and spares the next enqueue', async () => {
      const pool = new pg.Pool({ connectionString: db.url, max: 1, pipeline });
      pool.on('error', () => undefined);
      const pex = new PgExecutor(pool, quoteSchema(db.schema));
      const notifyErrors: unknown[] = [];
      const onError = (err: unknown) => notifyErrors.push(err);
      try {
        // PostgreSQL refuses channel names over 63 bytes, after the insert has committed.
        const queue = fresh();
        const [r] = await pex.jobInsertMany({ jobs: [newJob({ queue })], notifyAfter: { channels: ['c'.repeat(64)], onError } });
        expect(r).toMatchObject({ created: true, job: { queue } });
        expect(notifyErrors).toHaveLength(1);
        expect(await db.query('SELECT count(*)::int AS n FROM baton.jobs WHERE queue = $1', [queue])).toMatchObject({ rows: [{ n: 1 }] });
        const [next] = await pex.jobInsertMany({ jobs: [newJob({ queue })], notifyAfter: { channels: ['c'], onError } });
        expect(next!.created).toBe(true);
        expect(notifyErrors).toHaveLength(1);
      } finally {
        await pool.end();
      }
    });
  });
});

describe('a connection that dies under an autocommit enqueue', () => {
  it('fails that enqueue as DB_UNAVAILABLE and leaves the process and the pool working', async () => {
    const app = `baton-killed-${process.pid}`;
    const pool = new pg.Pool({ connectionString: db.url, max: 1, pipeline: true, application_name: app });
    pool.on('error', () => undefined);
    const pex = new PgExecutor(pool, quoteSchema(db.schema));
    const onError = () => undefined;
    const locker = await db.pool.connect();
    try {
      // Hold the insert behind a table lock, so its connection is checked out and busy when killed.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE baton.jobs IN EXCLUSIVE MODE');
      const enqueued = pex.jobInsertMany({ jobs: [newJob({ queue: fresh() })], notifyAfter: { channels: ['x'], onError } });
      // Handled from here on: the termination can reach this connection before the terminating
      // query answers, and a rejection nobody is listening for yet fails the whole run.
      const failed = expectBatonError(enqueued, 'DB_UNAVAILABLE');
      const pid = await waitFor(
        async () =>
          (await db.query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [app])).rows[0]
            ?.pid as number | undefined,
        { message: 'the insert waiting on the lock' },
      );
      await db.query('SELECT pg_terminate_backend($1)', [pid]);
      // Without an 'error' listener on the checked-out client this ends the test process.
      await failed;
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
    // The dead connection was not pooled again: the next enqueue gets a fresh one.
    const [r] = await pex.jobInsertMany({ jobs: [newJob({ queue: fresh() })], notifyAfter: { channels: ['x'], onError } });
    expect(r!.created).toBe(true);
    await pool.end();
  });
});
