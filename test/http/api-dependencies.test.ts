// Job dependencies over HTTP through the typed client: dependsOn in the body, the waiting state
// on the wire and in the queue's depth and metrics, unknown parents a 400 that writes nothing.

import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { jobRow } from '../helpers/factory.ts';
import { countJobs, errorCode, okJson, useApi } from './harness.ts';

const db = useTestDatabase();
const api = useApi(db);

describe('POST /api/jobs with dependsOn', () => {
  it('a dependent is waiting on the wire, in depth and in the metrics; cancelling its parent cancels it', async () => {
    const parent = await okJson(api.client.api.jobs.$post({ json: { jobType: 'p', queue: 'deps' } }));
    const res = await api.client.api.jobs.$post({
      json: { jobType: 'c', queue: 'deps', dependsOn: [parent.id], onParentFailure: 'cancel' },
    });
    const child = await okJson(res, 201);
    expect(child).toMatchObject({ state: 'waiting', waitingFor: 1, dependsOn: [parent.id] });
    expect((await jobRow(db.pool, child.id))!.state).toBe('waiting');
    const depth = await okJson(api.client.api.queues[':queue'].depth.$get({ param: { queue: 'deps' } }));
    expect(depth.counts).toMatchObject({ pending: 1, waiting: 1 });
    const metrics = await (await api.raw('/metrics')).text();
    expect(metrics).toMatch(/baton_jobs\{queue="deps",state="waiting"\} 1/);
    const cancelled = await api.client.api.jobs[':id'].cancel.$post({ param: { id: parent.id } });
    expect(cancelled.status).toBe(200);
    const after = await okJson(api.client.api.jobs[':id'].$get({ param: { id: child.id } }));
    expect(after).toMatchObject({
      state: 'cancelled',
      lastError: { kind: 'parent_failed', message: `parent job ${parent.id} was cancelled` },
    });
  });

  it('unknown parent ids are a 400 naming them, and nothing is written', async () => {
    const before = await countJobs(db);
    const res = await api.client.api.jobs.batch.$post({
      json: {
        jobs: [
          { jobType: 'c', queue: 'deps' },
          { jobType: 'c', queue: 'deps', dependsOn: ['987654321'] },
        ],
      },
    });
    expect(res.status).toBe(400);
    expect(await errorCode(res)).toBe('INVALID_ARGUMENT');
    expect(await countJobs(db)).toBe(before);
    const bad = await api.client.api.jobs.$post({ json: { jobType: 'c', dependsOn: ['not-an-id'] } });
    expect(bad.status).toBe(400);
    const orphan = await api.client.api.jobs.$post({ json: { jobType: 'c', onParentFailure: 'run' } });
    expect(orphan.status).toBe(400);
  });
});
