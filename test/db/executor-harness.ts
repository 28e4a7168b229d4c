// Shared setup of the executor conformance files (test/db/executor-*.test.ts): the file's own
// database, a PgExecutor and a producer-only Baton on it, and the helpers those files share.
//
// `ex` and `baton` are live bindings, set once useExecutorHarness()'s beforeAll has run: read
// them inside tests and hooks only. Every test works in queues of its own (fresh()), so the
// tests of one file, which share its database, never claim each other's rows. Times are
// compared on the database clock (e.g. run_at - updated_at of one statement), never the test's.

import { afterAll, beforeAll, expect } from 'vitest';
import type { Baton } from '../../src/core/baton.ts';
import { createBaton } from '../../src/create-baton.ts';
import { PgExecutor } from '../../src/db/pg/pg-executor.ts';
import type { AttemptErrorInput, NewJob } from '../../src/driver/executor.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { BatonError } from '../../src/types/errors.ts';
import { type TestDatabase, useTestDatabase } from '../helpers/db.ts';
import { jobRow } from '../helpers/factory.ts';

/** The executor under test, on the file's pool. */
export let ex: PgExecutor;
/** A producer-only engine (no queues): enqueue and admin over the file's pool. */
export let baton: Baton;
let current: TestDatabase | undefined;

/** Gives the calling test file its database, `ex` and `baton`; call once, at the top level. */
export function useExecutorHarness(): TestDatabase {
  const db = useTestDatabase();
  beforeAll(() => {
    current = db;
    ex = new PgExecutor(db.pool, quoteSchema(db.schema));
    baton = createBaton({ pool: db.pool });
  });
  afterAll(async () => {
    await baton?.stop();
  });
  return db;
}

function database(): TestDatabase {
  if (!current) throw new Error('executor harness: call useExecutorHarness() at the top of the test file');
  return current;
}

let seq = 0;
/** A queue name no other test uses. */
export const fresh = (prefix = 'q') => `${prefix}-${++seq}`;
export const LEASE = 30_000;

export function newJob(over: Partial<NewJob> = {}): NewJob {
  return {
    tenantId: 'default',
    queue: 'default',
    jobType: 'test.job',
    payload: {},
    priority: 0,
    runAt: null,
    delayMs: 0,
    maxAttempts: 5,
    idempotencyKey: null,
    traceContext: null,
    ...over,
  };
}

export function claim(queue: string, limit: number, opts: { owner?: string; intoRunning?: boolean; leaseMs?: number } = {}) {
  return ex.jobClaim({ queue, limit, owner: opts.owner ?? 'w-a', intoRunning: opts.intoRunning ?? true, leaseMs: opts.leaseMs ?? LEASE });
}

/** The raw jobs row of `id` (snake_case, bigints as text); the test fails if there is none. */
export const row = async (id: string) => (await jobRow(database().pool, id))!;
/** a - b in milliseconds. */
export const ms = (a: Date, b: Date) => a.getTime() - b.getTime();

export async function expireLeases(ids: string[]): Promise<void> {
  await database().query(`UPDATE baton.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ANY($1::bigint[])`, [ids]);
}

/** Reaps expired leases only (no fast reclaim); returns the reaped rows of `ids`. */
export async function reapExpired(ids: string[]) {
  const reaped = await ex.jobReap({ limit: 10_000, graceMs: 60_000, fastReclaim: false });
  return reaped.filter((r) => ids.includes(r.id));
}

export function attemptError(attempt: number, token: string, over: Partial<AttemptErrorInput> = {}): AttemptErrorInput {
  return {
    attempt,
    token,
    kind: 'transient',
    name: 'Error',
    message: `failed attempt ${attempt}`,
    stack: `Error: failed attempt ${attempt}\n    at handler`,
    ...over,
  };
}

/** Rows in the whole jobs table (to show that a refused write wrote nothing). */
export async function jobCount(): Promise<number> {
  return (await database().query<{ n: number }>('SELECT count(*)::int AS n FROM baton.jobs')).rows[0]!.n;
}

export async function expectBatonError(p: Promise<unknown> | (() => unknown), code: string): Promise<BatonError> {
  let err: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    err = e;
  }
  expect(err, `expected BatonError ${code}`).toBeInstanceOf(BatonError);
  expect((err as BatonError).code).toBe(code);
  return err as BatonError;
}
