// The edge's error mapping for values the database refused: a real PostgreSQL data
// exception (class 22) reaching onError, also wrapped as INTERNAL by some code path,
// answers 400 INVALID_ARGUMENT, never a 500.

import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { AppEnv } from '../../src/http/context.ts';
import { handleError } from '../../src/http/errors.ts';
import { BatonError } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase();

/** The error PostgreSQL raises for year 10000 as Date#toISOString writes it (SQLSTATE 22009). */
async function realDataException(): Promise<Error> {
  const err = await db.query(`SELECT '+010000-01-01T00:00:00.000Z'::timestamptz`).catch((e: Error) => e);
  expect((err as { code?: string }).code).toBe('22009');
  return err as Error;
}

function appThrowing(err: Error) {
  const app = new Hono<AppEnv>();
  app.onError(handleError);
  app.get('/boom', () => {
    throw err;
  });
  return app;
}

describe('data exceptions at the edge', () => {
  it.each([
    ['raw', (e: Error) => e],
    ['wrapped as INTERNAL', (e: Error) => new BatonError('INTERNAL', 'database error', { cause: e })],
  ])('%s -> 400 INVALID_ARGUMENT naming the SQLSTATE', async (_name, wrap) => {
    const res = await appThrowing(wrap(await realDataException())).request('/boom');
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: { code: 'INVALID_ARGUMENT', message: 'a value was rejected by the database', details: { sqlstate: '22009' } },
    });
  });

  it('an INTERNAL without a data exception stays a generic 500', async () => {
    const res = await appThrowing(new BatonError('INTERNAL', 'secret detail', { cause: new Error('x') })).request('/boom');
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: { code: 'INTERNAL', message: 'internal error' } });
  });
});
