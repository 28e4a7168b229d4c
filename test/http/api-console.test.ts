// The console's routes through the typed client on a real server and database: queue pause
// and resume (404 unknown, 400 bad name, visible in /api/queues, /api/stats and /metrics),
// run now (404, 409), bulk replay/cancel with per-id outcomes, listing sort and time filters,
// the stats snapshot with its scheduled counts, and the chart history the server keeps.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONSOLE_HTML_PATH_DEFAULT } from '../../src/http/app.ts';
import { JOB_SORT_WINDOW } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { waitFor } from '../helpers/wait.ts';
import { errorCode, JSON_HEADERS, okJson, useApi } from './harness.ts';

const db = useTestDatabase();
const api = useApi(db);

const state = async (id: string) => (await db.query('SELECT state FROM baton.jobs WHERE id = $1', [id])).rows[0]?.state;

describe('queue pause over HTTP', () => {
  it('pauses and resumes a known queue; 404 for an unknown one, 400 for a bad name; shown everywhere queues are', async () => {
    await insertJob(db.pool, { queue: 'pz', jobType: 'x' });
    const q = api.client.api.queues[':queue'];
    const paused = await q.pause.$post({ param: { queue: 'pz' } });
    const body = await okJson(paused, 200);
    expect(body).toMatchObject({ queue: 'pz', paused: true });
    expect(Date.parse(body.pausedAt ?? '')).not.toBeNaN();
    expect((await db.query(`SELECT queue FROM baton.paused_queues`)).rows).toEqual([{ queue: 'pz' }]);

    const unknown = await q.pause.$post({ param: { queue: 'no-such-queue' } });
    expect(unknown.status).toBe(404);
    expect(await errorCode(unknown)).toBe('QUEUE_NOT_FOUND');
    expect((await q.resume.$post({ param: { queue: 'no-such-queue' } })).status).toBe(404);
    const bad = await api.raw(`/api/queues/${encodeURIComponent('a b')}/pause`, { method: 'POST', headers: JSON_HEADERS });
    expect(bad.status).toBe(400);
    expect(await errorCode(bad)).toBe('INVALID_ARGUMENT');
    expect((await db.query(`SELECT count(*)::int AS n FROM baton.paused_queues`)).rows[0].n).toBe(1);

    const { queues } = await okJson(api.client.api.queues.$get());
    expect(queues.find((x) => x.queue === 'pz')).toMatchObject({ paused: true, pausedAt: body.pausedAt });
    const stats = await okJson(api.client.api.stats.$get({ query: {} }));
    expect(stats.queues.find((x) => x.queue === 'pz')).toMatchObject({ paused: true, counts: { pending: 1 } });
    expect(await (await api.raw('/metrics')).text()).toMatch(/baton_queue_paused\{queue="pz"\} 1\b/);

    const resumed = await okJson(q.resume.$post({ param: { queue: 'pz' } }));
    expect(resumed).toEqual({ queue: 'pz', paused: false, pausedAt: null });
    expect((await db.query(`SELECT count(*)::int AS n FROM baton.paused_queues`)).rows[0].n).toBe(0);
    expect(await (await api.raw('/metrics')).text()).toMatch(/baton_queue_paused\{queue="pz"\} 0\b/);
  });
});

describe('run now', () => {
  it('makes a delayed job due now; 409 unless pending, 404 unknown or malformed', async () => {
    const created = await api.client.api.jobs.$post({ json: { jobType: 'later', queue: 'nobody-runs-this', delayMs: 3_600_000 } });
    const { id } = await okJson(created);
    const run = api.client.api.jobs[':id']['run-now'];
    const res = await run.$post({ param: { id } });
    const job = await okJson(res, 200);
    expect(job.state).toBe('pending');
    expect(Date.parse(job.runAt)).toBeLessThanOrEqual(Date.now() + 1_000);
    const r = (await db.query('SELECT run_at <= now() AS due FROM baton.jobs WHERE id = $1', [id])).rows[0];
    expect(r.due).toBe(true);

    const done = await insertJob(db.pool, { state: 'succeeded' });
    const conflict = await run.$post({ param: { id: done } });
    expect(conflict.status).toBe(409);
    expect(await errorCode(conflict)).toBe('JOB_STATE_CONFLICT');
    expect((await run.$post({ param: { id: '999999999' } })).status).toBe(404);
    expect((await run.$post({ param: { id: 'abc' } })).status).toBe(404);
  });
});

describe('bulk', () => {
  it('replays and cancels a selection, reporting each id: done, conflict or not found; nothing else is touched', async () => {
    const dead = [await insertJob(db.pool, { state: 'dead_lettered' }), await insertJob(db.pool, { state: 'dead_lettered' })];
    const running = await insertJob(db.pool, { state: 'running' });
    const res = await api.client.api.jobs.bulk.$post({ json: { action: 'replay', ids: [...dead, running, '999999999', 'abc'] } });
    const body = await okJson(res, 200);
    expect(body).toMatchObject({ action: 'replay', done: 2, refused: 3 });
    expect(body.results).toEqual([
      { id: dead[0], ok: true, state: 'pending' },
      { id: dead[1], ok: true, state: 'pending' },
      { id: running, ok: false, error: { code: 'JOB_STATE_CONFLICT', message: expect.any(String) }, state: 'running' },
      { id: '999999999', ok: false, error: { code: 'JOB_NOT_FOUND', message: expect.any(String) } },
      { id: 'abc', ok: false, error: { code: 'JOB_NOT_FOUND', message: 'job not found' } },
    ]);
    expect([await state(dead[0]!), await state(dead[1]!), await state(running)]).toEqual(['pending', 'pending', 'running']);

    // A running job's cancel is a request: done, the job still running (its handler is signalled).
    const cancel = await okJson(api.client.api.jobs.bulk.$post({ json: { action: 'cancel', ids: [dead[0]!, running] } }));
    expect(cancel.results).toEqual([
      { id: dead[0], ok: true, state: 'cancelled' },
      { id: running, ok: true, state: 'running' },
    ]);
    expect(await state(dead[0]!)).toBe('cancelled');
    expect(await state(running)).toBe('running');
    expect(
      (await db.query('SELECT cancel_requested_at FROM baton.jobs WHERE id = $1', [running])).rows[0].cancel_requested_at,
    ).toBeInstanceOf(Date);
  });

  it('refuses a bad body whole: no ids, too many, repeated, unknown action', async () => {
    const pending = await insertJob(db.pool, {});
    for (const json of [
      { action: 'cancel', ids: [] },
      { action: 'cancel', ids: Array.from({ length: 101 }, (_, i) => String(i + 1)) },
      { action: 'cancel', ids: [pending, pending] },
      { action: 'delete', ids: [pending] },
      { action: 'cancel', ids: [pending], extra: 1 },
    ]) {
      const res = await api.raw('/api/jobs/bulk', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(json) });
      expect(res.status, JSON.stringify(json)).toBe(400);
    }
    expect(await state(pending)).toBe('pending');
  });
});

describe('listing sort and time filters', () => {
  it('sorts by a column both ways and filters by creation time; bad values are 400s naming the parameter', async () => {
    // Created in id order, as jobs are: createdAt is the id order.
    const ids = [
      await insertJob(db.pool, { queue: 'sorted', jobType: 'b', createdAt: '2031-01-01T00:00:00Z' }),
      await insertJob(db.pool, { queue: 'sorted', jobType: 'c', createdAt: '2031-01-02T00:00:00Z' }),
      await insertJob(db.pool, { queue: 'sorted', jobType: 'a', createdAt: '2031-01-03T00:00:00Z' }),
    ];
    const list = async (query: Record<string, string>) =>
      (await okJson(api.client.api.jobs.$get({ query: { queue: 'sorted', ...query } }))).jobs.map((j) => j.id);
    expect(await list({ sort: 'jobType', order: 'asc' })).toEqual([ids[2], ids[0], ids[1]]);
    expect(await list({ sort: 'createdAt', order: 'desc' })).toEqual([ids[2], ids[1], ids[0]]);
    expect(await list({ sort: 'createdAt', order: 'asc' })).toEqual(ids);
    expect(await list({ createdAfter: '2031-01-02T00:00:00Z' })).toEqual([ids[2], ids[1]]);
    expect(await list({ createdAfter: '2031-01-01T12:00:00+11:00', createdBefore: '2031-01-03T00:00:00Z' })).toEqual([ids[1]]);
    const page = await okJson(api.client.api.jobs.$get({ query: { queue: 'sorted', createdBefore: '2031-01-02T00:00:00Z' } }));
    expect(page.total).toBe(1);
    expect(page.windowed).toBe(false);
    for (const [qs, field] of [
      ['sort=payload', 'sort'],
      ['order=up', 'order'],
      ['createdAfter=yesterday', 'createdAfter'],
      ['createdBefore=2031-01-01', 'createdBefore'],
    ]) {
      const res = await api.raw(`/api/jobs?${qs}`);
      expect(res.status, qs).toBe(400);
      expect(((await res.json()) as { error: { details: { issues: Array<{ path: string }> } } }).error.details.issues[0]?.path).toBe(field);
    }
  });
});

describe('sorted listings read a bounded window', () => {
  it('a sort no index serves, or due beside any state but pending, sorts the newest JOB_SORT_WINDOW matching jobs and says so; id and createdAt page through all', async () => {
    // The oldest five have the highest priority and are due long ago: outside the window, never listed by it.
    await db.query(
      `INSERT INTO baton.jobs (queue, tenant_id, job_type, state, finished_at, priority, run_at)
       SELECT 'windowed', 'default', 'w', 'succeeded', now(), CASE WHEN g <= 5 THEN 9 ELSE 0 END,
         now() - interval '1 day' + g * interval '1 second'
       FROM generate_series(1, $1::int) g ORDER BY g`,
      [JOB_SORT_WINDOW + 5],
    );
    const ids = (await db.query(`SELECT j.id::text FROM baton.jobs j WHERE j.queue = 'windowed' ORDER BY j.id`)).rows.map(
      (r) => r.id as string,
    );
    const oldest = ids.slice(0, 5);
    const page = (query: Record<string, string>) => okJson(api.client.api.jobs.$get({ query: { queue: 'windowed', ...query } }));

    const byPriority = await page({ sort: 'priority', order: 'desc', limit: '10' });
    expect(byPriority.windowed).toBe(true);
    expect(byPriority.total).toBe(JOB_SORT_WINDOW + 5);
    expect(byPriority.jobs.map((j) => j.id)).not.toEqual(expect.arrayContaining([oldest[0]]));
    // Ties are broken by id in the same order: the newest of the window's equal priorities.
    expect(byPriority.jobs.map((j) => j.id)).toEqual(ids.slice(-10).reverse());
    const past = await page({ sort: 'priority', order: 'desc', limit: '10', offset: String(JOB_SORT_WINDOW) });
    expect(past.jobs).toEqual([]);
    const byRunAt = await page({ sort: 'runAt', order: 'asc', limit: '1' });
    expect(byRunAt.jobs.map((j) => j.id)).toEqual([ids[5]]);
    const due = await page({ due: 'true', limit: '1' });
    expect(due.windowed).toBe(true);
    expect(due.total).toBe(JOB_SORT_WINDOW);
    // Pending jobs by due are live work, read whole: never windowed.
    const scheduled = await page({ state: 'pending', due: 'false' });
    expect(scheduled.windowed).toBe(false);

    for (const sort of ['id', 'createdAt'] as const) {
      const oldestFirst = await page({ sort, order: 'asc', limit: '5' });
      expect(oldestFirst.windowed, sort).toBe(false);
      expect(
        oldestFirst.jobs.map((j) => j.id),
        sort,
      ).toEqual(oldest);
      const deep = await page({ sort, order: 'desc', limit: '5', offset: String(JOB_SORT_WINDOW) });
      expect(
        deep.jobs.map((j) => j.id),
        sort,
      ).toEqual([...oldest].reverse());
      expect(deep.windowed, sort).toBe(false);
    }
    // The console pages a windowed listing up to the same bound.
    expect(readFileSync(path.join(path.dirname(CONSOLE_HTML_PATH_DEFAULT), 'jobs.js'), 'utf8')).toContain(
      `const SORT_WINDOW = ${JOB_SORT_WINDOW};`,
    );
  });
});

describe('stats', () => {
  it('answers counts, pause state and the window; windowSeconds is bounded', async () => {
    const res = await api.client.api.stats.$get({ query: { windowSeconds: '30' } });
    const body = await okJson(res, 200);
    expect(body.window.seconds).toBe(30);
    expect(Date.parse(body.at)).not.toBeNaN();
    const counts = (await okJson(api.client.api.queues.$get())).queues;
    expect(body.queues.map(({ scheduled: _, ...q }) => q)).toEqual(counts);
    for (const qs of ['windowSeconds=0', 'windowSeconds=3601', 'window=5'])
      expect((await api.raw(`/api/stats?${qs}`)).status, qs).toBe(400);
  });

  it('counts the scheduled jobs (run-at ahead) of each queue apart, and lists them with due=false', async () => {
    const later = await insertJob(db.pool, { queue: 'sched-q', runAt: { inMs: 7 * 3_600_000 } });
    const now = await insertJob(db.pool, { queue: 'sched-q' });
    const stats = await okJson(api.client.api.stats.$get({ query: {} }));
    expect(stats.queues.find((q) => q.queue === 'sched-q')).toMatchObject({ counts: { pending: 2 }, scheduled: 1 });
    const list = async (due: 'true' | 'false') =>
      (await okJson(api.client.api.jobs.$get({ query: { queue: 'sched-q', state: 'pending', due } }))).jobs.map((j) => j.id);
    expect(await list('false')).toEqual([later]);
    expect(await list('true')).toEqual([now]);
    expect((await api.raw('/api/jobs?due=soon')).status).toBe(400);
  });

  it('keeps a history of samples in the server, so a page loaded later draws the last minutes', async () => {
    // The harness samples every 250 ms once someone reads the stats.
    await okJson(api.client.api.stats.history.$get({ query: {} }));
    await insertJob(db.pool, { queue: 'hist-q', runAt: { inMs: 3_600_000 } });
    let samples: Array<{ at: string; scheduled: number }> = [];
    await waitFor(
      async () => {
        samples = (await okJson(api.client.api.stats.history.$get({ query: {} }))).samples;
        return samples.length >= 3 && samples.at(-1)!.scheduled >= 1;
      },
      { message: 'three samples, the last seeing the scheduled job' },
    );
    const body = await okJson(api.client.api.stats.history.$get({ query: { since: samples[1]!.at } }));
    expect(body).toMatchObject({ intervalMs: 250, windowSeconds: 10 });
    expect(body.samples[0]!.at > samples[1]!.at).toBe(true);
    expect(Date.parse(samples[0]!.at)).toBeLessThan(Date.parse(samples[1]!.at));
    expect((await api.raw('/api/stats/history?since=yesterday')).status).toBe(400);
  });
});
