// Debounce and throttle over HTTP through the typed client, against a real server and the file's
// own database: POST /api/jobs answers 201 for the job a key's enqueue created and 200 with
// collapsedBy for one it folded or dropped; the batch route answers per spec; GET /api/jobs/:id
// shows the rule; bad rules are 400 INVALID_ARGUMENT naming the field, and write nothing.

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { badInputHelpers, countJobs, field, JSON_HEADERS, okJson, useApi } from './harness.ts';

const db = useTestDatabase();
const api = useApi(db);
const { rejectsEnqueue } = badInputHelpers(db, () => api);

describe('debounce and throttle over HTTP', () => {
  it('trailing debounce: 201 for the created job, 200 with collapsedBy and the replaced payload after', async () => {
    const spec = (n: number) => ({
      jobType: 'sync',
      queue: 'h1',
      payload: { n },
      debounce: { key: 'u:1', windowMs: 60_000, maxWaitMs: 120_000 },
    });
    const first = await okJson(api.client.api.jobs.$post({ json: spec(1) }), 201);
    expect(first.collapsedBy).toBeUndefined();
    expect(first.enqueueWindow).toEqual({ kind: 'debounce', key: 'u:1', windowMs: 60_000, mode: 'trailing', maxWaitMs: 120_000 });
    const second = await okJson(api.client.api.jobs.$post({ json: spec(2) }), 200);
    expect(second).toMatchObject({ id: first.id, collapsedBy: 'debounce', payload: { n: 2 }, state: 'pending' });
    expect(await countJobs(db, `queue = 'h1'`)).toBe(1);
    const got = await okJson(api.client.api.jobs[':id'].$get({ param: { id: first.id } }), 200);
    expect(got).toMatchObject({ payload: { n: 2 }, enqueueWindow: { kind: 'debounce', key: 'u:1', mode: 'trailing' } });
    // A plain job's page says it has no rule.
    const plain = await okJson(api.client.api.jobs.$post({ json: { jobType: 'plain', queue: 'h1' } }), 201);
    expect((await okJson(api.client.api.jobs[':id'].$get({ param: { id: plain.id } }), 200)).enqueueWindow).toBeUndefined();
  });

  it('throttle and leading debounce in a batch: created flags and collapsedBy per spec, in input order', async () => {
    const t = { jobType: 'ping', queue: 'h2', throttle: { key: 'api', windowMs: 60_000 } };
    const l = { jobType: 'ping', queue: 'h2', debounce: { key: 'lead', windowMs: 60_000, mode: 'leading' as const } };
    const res = await okJson(api.client.api.jobs.batch.$post({ json: { jobs: [t, t, l, l, { jobType: 'plain', queue: 'h2' }] } }), 201);
    expect(res.results.map((r) => [r.created, r.collapsedBy ?? null])).toEqual([
      [true, null],
      [false, 'throttle'],
      [true, null],
      [false, 'debounce'],
      [true, null],
    ]);
    expect(res.results[1]!.job.id).toBe(res.results[0]!.job.id);
    expect(res.results[3]!.job.id).toBe(res.results[2]!.job.id);
    // Every spec collapsed: 200.
    const again = await api.client.api.jobs.batch.$post({ json: { jobs: [t, l] } });
    expect(again.status).toBe(200);
  });

  it.each([
    [{ debounce: { key: 'k', windowMs: 0 } }, 'debounce.windowMs'],
    [{ debounce: { key: '', windowMs: 10 } }, 'debounce.key'],
    [{ debounce: { key: 'k', windowMs: 10, mode: 'sideways' } }, 'debounce.mode'],
    [{ debounce: { key: 'k', windowMs: 100, maxWaitMs: 10 } }, 'debounce.maxWaitMs'],
    [{ debounce: { key: 'k', windowMs: 10, extra: 1 } }, 'debounce.extra'],
    [{ throttle: { key: 'k', windowMs: 10, limit: 0 } }, 'throttle.limit'],
    [{ debounce: { key: 'k', windowMs: 10 }, throttle: { key: 'k', windowMs: 10 } }, 'throttle'],
    [{ debounce: { key: 'k', windowMs: 10 }, delayMs: 5 }, 'delayMs'],
    [{ throttle: { key: 'k', windowMs: 10 }, idempotencyKey: 'i' }, 'idempotencyKey'],
  ])('refuses %j with 400 INVALID_ARGUMENT naming the field', async (extra, path) => {
    const body = await rejectsEnqueue(JSON.stringify({ jobType: 'x', queue: 'bad', ...extra }), 400, 'INVALID_ARGUMENT');
    expect(field(body)).toBe(path);
  });

  it('a bad rule in a batch refuses the whole batch', async () => {
    const before = await countJobs(db);
    const res = await api.raw('/api/jobs/batch', {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ jobs: [{ jobType: 'x' }, { jobType: 'x', throttle: { key: 'k', windowMs: -1 } }] }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('INVALID_ARGUMENT');
    expect(await countJobs(db)).toBe(before);
  });
});
