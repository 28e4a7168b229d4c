// The typed client's answers carry each route's documented error statuses, so a caller can
// branch on `res.status` (401, 404, 409, ...) or `res.ok` and read the error body typed; the
// type-level part fails `npm run typecheck`, the rest runs against a token-protected server.

import { describe, expect, expectTypeOf, it } from 'vitest';
import type { ApiErrorCode, BatonClient } from '../../src/client/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { okJson, useApi } from './harness.ts';

const db = useTestDatabase();
const TOKEN = 'client-types-token';
const api = useApi(db, { app: { apiToken: TOKEN } });
const authed = useApi(db, { app: { apiToken: TOKEN }, clientToken: TOKEN });

type Answer<F extends (...args: never[]) => Promise<{ status: number }>> = Awaited<ReturnType<F>>;
type Api = BatonClient['api'];

describe('the typed client: error statuses are in each route type', () => {
  it('types each route with its successes and exactly its documented error statuses', () => {
    expectTypeOf<Answer<Api['jobs']['$post']>['status']>().toEqualTypeOf<200 | 201 | 400 | 401 | 403 | 413 | 415 | 421 | 500 | 503>();
    expectTypeOf<Answer<Api['jobs'][':id']['$get']>['status']>().toEqualTypeOf<200 | 400 | 401 | 404 | 421 | 500 | 503>();
    // 202: a running job asked to stop.
    expectTypeOf<Answer<Api['jobs'][':id']['cancel']['$post']>['status']>().toEqualTypeOf<
      200 | 202 | 400 | 401 | 403 | 404 | 409 | 413 | 415 | 421 | 500 | 503
    >();
    expectTypeOf<Answer<BatonClient['readyz']['$get']>['status']>().toEqualTypeOf<200 | 500 | 503>();
  });

  it('a 401 without a token: `res.status === 401` compiles and narrows the body to the error body', async () => {
    const id = await insertJob(db.pool, {});
    const res = await api.client.api.jobs[':id'].$get({ param: { id } });
    expect(res.status).toBe(401);
    if (res.status === 401) {
      const body = await res.json();
      expectTypeOf(body.error.code).toEqualTypeOf<ApiErrorCode>();
      expect(body.error.code).toBe('UNAUTHORIZED');
    }
    // @ts-expect-error GET /api/jobs/:id never answers 409
    expect(res.status === 409).toBe(false);
  });

  it('`!res.ok` narrows to the error answers; after it, the body is the job', async () => {
    const enqueue = (jobType: string) => authed.client.api.jobs.$post({ json: { jobType } });
    const refused = await enqueue('');
    expect(refused.ok).toBe(false);
    if (!refused.ok) {
      const { error } = await refused.json();
      expect([refused.status, error.code]).toEqual([400, 'INVALID_ARGUMENT']);
    }
    const res = await enqueue('noop');
    if (!res.ok) expect.fail(`enqueue answered ${res.status}`);
    const job = await res.json();
    expectTypeOf(job).toHaveProperty('warnings');
    expect(job.state).toBe('pending');
    const read = await okJson(authed.client.api.jobs[':id'].$get({ param: { id: job.id } }), 200);
    expect(read.id).toBe(job.id);
  });
});
