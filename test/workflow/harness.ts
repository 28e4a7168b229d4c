// Workflow test helpers on top of the engine harness: empties the workflow tables
// before each test and waits for a run to reach a state (polling, with a deadline).

import { beforeEach, expect } from 'vitest';
import { type Baton, BatonError, type RunDetail, type RunState } from '../../src/index.ts';
import { type EngineOptions, type Engines, useEngines } from '../engine/harness.ts';
import type { TestDatabase } from '../helpers/db.ts';
import { WaitTimeoutError, waitFor } from '../helpers/wait.ts';

export function useWorkflowEngines(db: TestDatabase, defaults: () => EngineOptions = () => ({})): Engines {
  const engines = useEngines(db, () => ({ pollIntervalMs: 50, backoffBaseMs: 1, backoffCapMs: 5, ...defaults() }));
  beforeEach(async () => {
    await db.query('TRUNCATE baton.workflow_runs CASCADE');
  });
  return engines;
}

/**
 * Waits until run `id` is in `state`; returns its detail. On timeout the error says where the run
 * was last seen (state, steps, attempt and errors of its driving job), so a stall can be read.
 */
export async function runInState(baton: Baton, id: string, state: RunState, timeoutMs = 15_000): Promise<RunDetail> {
  let last: RunDetail | null = null;
  try {
    return await waitFor(
      async () => {
        last = await baton.workflows.getRun(id);
        return last?.state === state ? last : null;
      },
      { timeoutMs, message: `run ${id} to be ${state}` },
    );
  } catch (err) {
    if (!(err instanceof WaitTimeoutError)) throw err;
    throw new WaitTimeoutError(`${err.message}; the run was last seen as ${describeRun(last)}`, { cause: err });
  }
}

function describeRun(r: RunDetail | null): string {
  if (!r) return 'missing';
  return JSON.stringify({
    state: r.state,
    blockedReason: r.blockedReason?.message ?? null,
    wakeAt: r.wakeAt,
    attempt: r.attempt,
    steps: r.steps.map((s) => `${s.key}:${s.kind}:${s.status}:${s.attempts}`),
    errors: r.errors.map((e) => `${e.kind}: ${e.message}`),
  });
}

export async function jobOf(db: TestDatabase, runId: string): Promise<{ id: string; state: string; attempt: number; run_at: Date }> {
  const r = await db.query(
    `SELECT j.id::text, j.state, j.attempt, j.run_at FROM baton.jobs j JOIN baton.workflow_runs r ON r.job_id = j.id WHERE r.id = $1`,
    [runId],
  );
  if (!r.rows[0]) throw new Error(`run ${runId} has no driving job`);
  return r.rows[0];
}

/** The driving job's lease of run `runId` runs out, as when its process is killed: a live worker's reaper takes the job back. */
export async function expireLease(db: TestDatabase, runId: string): Promise<void> {
  const job = await jobOf(db, runId);
  await db.query(`UPDATE baton.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [job.id]);
}

/** The events stored for run `runId`, oldest first, with the wait that consumed each (null: kept). */
export async function runEvents(
  db: TestDatabase,
  runId: string,
): Promise<Array<{ name: string; payload: unknown; consumed_by: string | null }>> {
  const r = await db.query('SELECT name, payload, consumed_by FROM baton.workflow_events WHERE run_id = $1 ORDER BY id', [runId]);
  return r.rows;
}

/**
 * The finished-job counters (what queue counts read) and the finished-run counts (migration 0029,
 * what the runs' scrape reads) agree with the rows: every statement that cancels, replays or
 * finishes a driving job or a run keeps them.
 */
export async function expectCountersMatchRows(db: TestDatabase): Promise<void> {
  // One statement, one snapshot: a driving job finishing between two reads would otherwise show
  // in one and not the other (its run reads succeeded before the completer writes the job).
  const r = await db.query<{ counted: unknown; rows: unknown; countedRuns: unknown; runs: unknown }>(
    `SELECT
      (SELECT COALESCE(json_agg(c ORDER BY c.queue, c.state), '[]') FROM (
        SELECT queue, state, sum(n)::int AS n FROM baton.finished_counts GROUP BY queue, state HAVING sum(n) <> 0) c) AS counted,
      (SELECT COALESCE(json_agg(j ORDER BY j.queue, j.state), '[]') FROM (
        SELECT queue, state, count(*)::int AS n FROM baton.jobs WHERE finished_at IS NOT NULL GROUP BY queue, state) j) AS rows,
      (SELECT COALESCE(json_agg(c ORDER BY c.name, c.state), '[]') FROM (
        SELECT name, state, sum(n)::int AS n FROM (
          SELECT name, state, n FROM baton.workflow_run_counts
          UNION ALL SELECT name, state, n FROM baton.workflow_run_count_deltas) x
        GROUP BY name, state HAVING sum(n) <> 0) c) AS "countedRuns",
      (SELECT COALESCE(json_agg(r ORDER BY r.name, r.state), '[]') FROM (
        SELECT name, state, count(*)::int AS n FROM baton.workflow_runs WHERE state IN ('succeeded', 'cancelled', 'timed_out')
        GROUP BY name, state) r) AS runs`,
  );
  expect(r.rows[0]!.counted).toEqual(r.rows[0]!.rows);
  expect(r.rows[0]!.countedRuns).toEqual(r.rows[0]!.runs);
}

/** The code of the BatonError `p` rejects with (throws when it resolves or rejects otherwise). */
export async function batonCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof BatonError) return err.code;
    throw err;
  }
  throw new Error('expected a BatonError');
}
