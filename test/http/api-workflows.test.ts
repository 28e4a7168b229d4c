// /api/workflows through the typed client against a real server and worker: a run
// started over HTTP waits for an event sent over HTTP and finishes; duplicates answer
// 200; bad input is 400, unknown names and ids 404, state conflicts 409. A workflow only
// another process defines is started by name over HTTP and scheduled through /api/cron.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBaton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { type ApiHarness, errorCode, JSON_HEADERS, okJson, startApi } from './harness.ts';

const db = useTestDatabase();
let api: ApiHarness;

beforeAll(async () => {
  api = await startApi(db, { baton: { queues: { default: 2 }, pollIntervalMs: 50 } });
  api.baton.workflow<{ sku: string }>('place', async (ctx) => {
    const reserved = await ctx.step('reserve', () => ({ sku: ctx.input.sku }));
    const shipped = await ctx.waitForEvent<{ tracking: string }>('shipped', 'shipped', { timeoutMs: 60_000 });
    return { reserved, tracking: shipped?.payload.tracking ?? null };
  });
});
afterAll(async () => {
  await api?.close();
});

describe('/api/workflows', () => {
  it('starts a run, shows it waiting, resumes it on an event and shows its steps', async () => {
    const wf = api.client.api.workflows;
    const res = await wf[':name'].runs.$post({ param: { name: 'place' }, json: { input: { sku: 'A1' }, idempotencyKey: 'o-1' } });
    expect(res.status).toBe(201);
    const { run } = await okJson(res);
    const dup = await wf[':name'].runs.$post({ param: { name: 'place' }, json: { input: { sku: 'zz' }, idempotencyKey: 'o-1' } });
    expect(dup.status).toBe(200);
    expect((await okJson(dup)).run.id).toBe(run.id);

    await waitFor(async () => (await okJson(wf.runs[':id'].$get({ param: { id: run.id } }))).state === 'waiting', {
      message: 'the run to wait',
    });
    const list = await okJson(wf.runs.$get({ query: { name: 'place', state: 'waiting' } }));
    expect(list.runs.map((r) => r.id)).toContain(run.id);

    const ev = await wf.runs[':id'].events[':name'].$post({
      param: { id: run.id, name: 'shipped' },
      json: { payload: { tracking: 'T-9' }, idempotencyKey: 'ship-1' },
    });
    expect(ev.status).toBe(201);
    const again = await wf.runs[':id'].events[':name'].$post({
      param: { id: run.id, name: 'shipped' },
      json: { idempotencyKey: 'ship-1' },
    });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ duplicate: true });

    const done = await waitFor(
      async () => {
        const r = await okJson(wf.runs[':id'].$get({ param: { id: run.id } }));
        return r.state === 'succeeded' ? r : null;
      },
      { message: 'the run to succeed' },
    );
    expect(done.output).toEqual({ reserved: { sku: 'A1' }, tracking: 'T-9' });
    expect(done.steps.map((s) => [s.key, s.kind, s.status, s.attempts])).toEqual([
      ['reserve', 'step', 'succeeded', 1],
      ['shipped', 'event', 'succeeded', 1],
    ]);
    expect(done.steps[0]?.finishedAt).not.toBeNull();
    const metrics = await (await api.raw('/metrics')).text();
    expect(metrics).toContain('baton_workflow_runs{workflow="place",state="succeeded"} 1');
    expect(metrics).toMatch(/^baton_workflow_steps_executed_total [1-9]/m);
    expect(metrics).toContain('baton_workflow_resumes_total{cause="event"} 1');

    const cancel = await wf.runs[':id'].cancel.$post({ param: { id: run.id } });
    expect(cancel.status).toBe(409);
    expect(await errorCode(cancel as unknown as Response)).toBe('RUN_STATE_CONFLICT');
    const replay = await wf.runs[':id'].replay.$post({ param: { id: run.id } });
    expect(replay.status).toBe(409);
  });

  it('cancels a waiting run and replays it', async () => {
    const wf = api.client.api.workflows;
    const { run } = await okJson(wf[':name'].runs.$post({ param: { name: 'place' }, json: { input: { sku: 'B' } } }));
    await waitFor(async () => (await okJson(wf.runs[':id'].$get({ param: { id: run.id } }))).state === 'waiting');
    const cancelled = await wf.runs[':id'].cancel.$post({ param: { id: run.id } });
    expect(cancelled.status).toBe(200);
    expect((await okJson(cancelled)).state).toBe('cancelled');
    const ev = await api.raw(`/api/workflows/runs/${run.id}/events/shipped`, { method: 'POST', headers: JSON_HEADERS, body: '{}' });
    expect(ev.status).toBe(409);
    const replayed = await wf.runs[':id'].replay.$post({ param: { id: run.id } });
    expect(replayed.status).toBe(200);
    expect((await okJson(replayed)).replayCount).toBe(1);
  });

  it('refuses bad input with 400, unknown workflows and runs with 404', async () => {
    const post = (path: string, body: unknown) => api.raw(path, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(body) });
    const bad = await post('/api/workflows/place/runs', { input: 1, extra: true });
    expect(bad.status).toBe(400);
    expect(await errorCode(bad)).toBe('INVALID_ARGUMENT');
    expect(await errorCode(await post('/api/workflows/place/runs', { tenantId: '../x' }))).toBe('INVALID_ARGUMENT');
    const unknown = await post('/api/workflows/nope/runs', {});
    expect(unknown.status).toBe(404);
    expect(await errorCode(unknown)).toBe('WORKFLOW_NOT_FOUND');
    for (const path of ['/api/workflows/runs/0', '/api/workflows/runs/abc', '/api/workflows/runs/99999999']) {
      const res = await api.raw(path);
      expect(res.status, path).toBe(404);
      expect(await errorCode(res)).toBe('RUN_NOT_FOUND');
    }
    expect((await post('/api/workflows/runs/99999999/cancel', {})).status).toBe(404);
    expect((await post('/api/workflows/runs/99999999/events/x', {})).status).toBe(404);
    expect((await api.raw('/api/workflows/runs?limit=0')).status).toBe(400);
  });

  it('starts a workflow that only another process defines (404 for a name never registered), and schedules it', async () => {
    const worker = createBaton({ connectionString: db.url, poolSize: 2, queues: { 'remote-q': 1 }, pollIntervalMs: 50 });
    worker.workflow<{ n: number }>('remote', (ctx) => ctx.step('double', () => ctx.input.n * 2), { queue: 'remote-q' });
    await worker.start();
    try {
      expect(api.baton.workflows.names()).not.toContain('remote');
      const wf = api.client.api.workflows;
      const res = await wf[':name'].runs.$post({ param: { name: 'remote' }, json: { input: { n: 21 } } });
      expect(res.status).toBe(201);
      const { run } = await okJson(res);
      const done = await waitFor(
        async () => {
          const r = await okJson(wf.runs[':id'].$get({ param: { id: run.id } }));
          return r.state === 'succeeded' ? r : null;
        },
        { message: 'the remote run to succeed' },
      );
      expect(done.output).toBe(42);
      const typo = await wf[':name'].runs.$post({ param: { name: 'remot' }, json: {} });
      expect(typo.status).toBe(404);
      expect(await errorCode(typo)).toBe('WORKFLOW_NOT_FOUND');

      const cron = api.client.api.cron;
      const base = { name: 'remote-nightly', cron: '0 3 * * *', timezone: 'UTC' };
      const made = await okJson(cron.$post({ json: { ...base, workflow: 'remote', input: { n: 1 } } }), 201);
      expect(made.schedule).toMatchObject({ workflow: 'remote', jobType: 'workflow:remote', queue: 'remote-q', payload: { n: 1 } });
      const unknown = await cron.$post({ json: { ...base, name: 'x', workflow: 'remot' } });
      expect(unknown.status).toBe(404);
      expect(await errorCode(unknown)).toBe('WORKFLOW_NOT_FOUND');
      const direct = await cron.$post({ json: { ...base, name: 'y', jobType: 'workflow:remote' } });
      expect(direct.status).toBe(400);
      expect(await errorCode(direct)).toBe('INVALID_ARGUMENT');
      const neither = await cron.$post({ json: { ...base, name: 'z' } });
      expect(neither.status).toBe(400);
      await db.query('TRUNCATE baton.schedules');
    } finally {
      await worker.stop({ drainMs: 0 });
    }
  });
});
