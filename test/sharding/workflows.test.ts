// Workflows on a sharded Baton: runs live on the home cluster, and a run's driving job is named
// `<home>:<id>` like every other job it answers, so the jobId of a start, a read or a listing of
// runs opens that job through the admin API and over HTTP; a workflow whose queue is held by
// another cluster is refused when defined, and a schedule for such a queue when made, since the
// home cluster's jobs of that queue would never be worked.

import { afterEach, describe, expect, it } from 'vitest';
import type { ShardedBaton } from '../../src/core/sharding/sharded-baton.ts';
import { createShardedBaton } from '../../src/create-sharded-baton.ts';
import { createApp } from '../../src/http/app.ts';
import { wireRunSummarySchema } from '../../src/http/workflows/schemas.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { JSON_HEADERS } from '../helpers/http.ts';
import { waitFor } from '../helpers/wait.ts';

const a = useTestDatabase();
const b = useTestDatabase();
const open: ShardedBaton[] = [];

function sharded(): ShardedBaton {
  const s = createShardedBaton({
    clusters: { a: a.url, b: b.url },
    routes: { emails: 'a', flows: 'b', reports: 'b' },
    default: 'b',
    queues: { flows: 1 },
    pollIntervalMs: 200,
  });
  open.push(s);
  return s;
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.stop({ drainMs: 1_000 })));
});

describe('sharded Baton: workflows', () => {
  it("names a run's driving job <home>:<id>, usable by the admin API and at /api/jobs/:id", async () => {
    const s = sharded();
    s.workflow('greet', async (ctx) => ctx.step('hello', () => 'hi'), { queue: 'flows' });
    await s.start();
    const { run } = await s.startWorkflow('greet', null);
    expect(run.jobId).toMatch(/^b:[1-9][0-9]*$/);
    const jobId = run.jobId as string;
    expect((await s.admin.getJob(jobId)).queue).toBe('flows');
    await waitFor(async () => (await s.workflows.getRun(run.id))?.state === 'succeeded', { message: 'the run to succeed' });
    expect((await s.workflows.getRun(run.id))?.jobId).toBe(jobId);
    expect((await s.workflows.listRuns()).map((r) => r.jobId)).toEqual([jobId]);

    const app = createApp(s, { metrics: false });
    const job = await app.request(`/api/jobs/${jobId}`);
    expect(job.status).toBe(200);
    expect(((await job.json()) as { id: string; state: string }).id).toBe(jobId);
    const wire = await (await app.request(`/api/workflows/runs/${run.id}`)).json();
    expect(wireRunSummarySchema.pick({ jobId: true }).parse({ jobId: (wire as { jobId: string }).jobId })).toEqual({ jobId });
    const started = await app.request('/api/workflows/greet/runs', { method: 'POST', headers: JSON_HEADERS, body: '{}' });
    expect(started.status).toBe(201);
    const next = ((await started.json()) as { run: { jobId: string } }).run.jobId;
    expect(next).toMatch(/^b:/);
    expect((await app.request(`/api/jobs/${next}`)).status).toBe(200);
  });

  it('refuses a workflow whose queue is on another cluster than the home one, in either form', () => {
    const s = sharded();
    expect(() => s.workflow('w', async () => null, { queue: 'emails' })).toThrow(
      /queue emails is on cluster a; workflows run on the home cluster b/,
    );
    expect(() => s.workflow('w2', { queue: 'emails' })).toThrow(/queue emails is on cluster a; workflows run on the home cluster b/);
    // An unrouted queue goes to the default cluster, which is home.
    expect(() => s.workflow('w3', async () => null, { queue: 'misc' })).not.toThrow();
  });

  it('refuses a schedule for a queue of another cluster, over the library and HTTP, and stores none', async () => {
    const s = sharded();
    const timing = { cron: '0 3 * * *', timezone: 'UTC' };
    await expect(s.cron.upsert({ name: 'n', jobType: 'x', queue: 'emails', ...timing })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const app = createApp(s, { metrics: false });
    const res = await app.request('/api/cron', {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ name: 'n', jobType: 'x', queue: 'emails', ...timing }),
    });
    expect(res.status).toBe(400);
    const { schedule } = await s.cron.upsert({ name: 'ok', jobType: 'x', queue: 'reports', ...timing });
    await expect(s.cron.update(schedule.id, { queue: 'emails' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((await s.cron.list()).map((x) => [x.name, x.queue])).toEqual([['ok', 'reports']]);
  });
});
