// The cron chaos scenario: three schedules fire every second (fire_all, fire_once, skip)
// while the elected leader, which runs the ticker, is killed (kill -9) and paused (SIGSTOP),
// briefly and for longer than the misfire threshold. The workers are the suite's real
// engine processes; cron-checker.ts then proves from the jobs table that every occurrence
// in the window became exactly one job where the policy says so, and none ran outside it.

import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBaton, type MisfirePolicy } from '../../src/index.ts';
import { type CronCheck, type CronJob, type CronSchedules, checkCron } from './cron-checker.ts';
import { Harness } from './harness.ts';

/** The workers' misfire threshold: pauses of 4-5 s make occurrences missed, pauses of 1 s do not. */
export const CRON_CHAOS_THRESHOLD_MS = 2_000;
const MARGIN_MS = 400;
const DRAIN_DEADLINE_MS = 60_000;

type Fault = { kind: 'kill' } | { kind: 'pause'; ms: number };
/** The leader faults, in order, one every FAULT_GAP_MS. */
const FAULTS: Fault[] = [
  { kind: 'kill' },
  { kind: 'pause', ms: 4_500 },
  { kind: 'kill' },
  { kind: 'pause', ms: 1_000 },
  { kind: 'kill' },
  { kind: 'pause', ms: 5_000 },
  { kind: 'kill' },
];
const FAULT_GAP_MS = 4_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface CronRunResult {
  ok: boolean;
  check: CronCheck;
  violations: string[];
  /** Per kill: ms from the kill to the first occurrence job made afterwards (the new leader's first tick). */
  takeoverMs: number[];
}

export async function runCronScenario(o: { seed: number; useNetns: boolean }): Promise<CronRunResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `baton-chaos-cron-${o.seed}-`));
  console.log(`\n=== chaos cron: 3 schedules every second (fire_all, fire_once, skip), ${FAULTS.length} leader faults; history=${dir}`);
  // The workers inherit the environment: their misfire threshold.
  process.env.CHAOS_CRON_MISFIRE_MS = String(CRON_CHAOS_THRESHOLD_MS);
  const h = new Harness({ dir, seed: o.seed, workers: 3, concurrency: 4, leaseMs: 3_000, useNetns: o.useNetns });
  const violations: string[] = [];
  const takeoverMs: number[] = [];
  try {
    await h.setup();
    await h.startFleet();
    const producer = createBaton({ connectionString: h.cluster.url(), poolSize: 2 });
    try {
      await h.leaderSlot();
      const ids = {} as Record<MisfirePolicy, string>;
      let from = 0;
      for (const policy of ['fire_all', 'fire_once', 'skip'] as const) {
        const { schedule } = await producer.cron.upsert({
          name: `chaos-${policy}`,
          cron: '* * * * * *',
          timezone: 'UTC',
          jobType: 'chaos',
          queue: 'chaos',
          payload: { ms: 20 },
          misfirePolicy: policy,
          catchUpLimit: 1_000,
        });
        ids[policy] = schedule.id;
        from = Math.max(from, schedule.nextFireAt!.getTime());
      }
      const t0 = Date.now();
      for (const f of FAULTS) {
        await sleep(FAULT_GAP_MS);
        const slot = await h.leaderSlot();
        const at = Date.now();
        console.log(
          `    t=${((at - t0) / 1000).toFixed(1)}s ${f.kind} leader ${slot.workerId}${f.kind === 'pause' ? ` for ${f.ms} ms` : ''}`,
        );
        if (f.kind === 'kill') {
          await h.kill(slot);
          takeoverMs.push(await firstJobAfter(h, at));
        } else {
          await h.pause(slot, f.ms);
        }
      }
      await sleep(FAULT_GAP_MS);
      // Every occurrence up to here was due while a leader ticked; then the schedules stop.
      const to = Date.now() - 1_500;
      for (const id of Object.values(ids)) await producer.cron.pause(id);
      const deadline = Date.now() + DRAIN_DEADLINE_MS;
      while ((await unfinished(h)) > 0) {
        if (Date.now() > deadline) {
          violations.push(`drain: cron jobs unfinished ${DRAIN_DEADLINE_MS} ms after the last fault`);
          break;
        }
        await sleep(100);
      }
      const jobs = await cronJobs(h);
      const schedules: CronSchedules = {
        fire_all: { id: ids.fire_all, jobs: jobs.get(ids.fire_all) ?? [] },
        fire_once: { id: ids.fire_once, jobs: jobs.get(ids.fire_once) ?? [] },
        skip: { id: ids.skip, jobs: jobs.get(ids.skip) ?? [] },
      };
      const check = checkCron(schedules, { from, to, thresholdMs: CRON_CHAOS_THRESHOLD_MS, marginMs: MARGIN_MS });
      violations.push(...check.violations);
      if (check.missed === 0) violations.push('vacuous: no occurrence was missed, so the misfire policies were not exercised');
      for (const c of h.crashes) violations.push(`crash: worker ${c} exited without being killed or stopped`);
      console.log(
        `    occurrences in the window: ${check.occurrences}; missed (ticker late > ${CRON_CHAOS_THRESHOLD_MS} ms): ${check.missed}; jobs: fire_all ${check.jobs.fire_all}, fire_once ${check.jobs.fire_once}, skip ${check.jobs.skip}`,
      );
      console.log(`    kill -9 of the leader -> next occurrence enqueued: ${takeoverMs.map((m) => `${m} ms`).join(', ')}`);
      for (const v of violations) console.log(`    VIOLATION ${v}`);
      console.log(violations.length === 0 ? '    cron: VALID' : `    cron: INVALID (${violations.length})`);
      return { ok: violations.length === 0, check, violations, takeoverMs };
    } finally {
      await h.stopWorkers().catch(() => undefined);
      await producer.stop();
    }
  } finally {
    await h.teardown();
  }
}

/** Milliseconds from `at` to the creation of the first occurrence job after it. */
async function firstJobAfter(h: Harness, at: number): Promise<number> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const r = await h.admin.query<{ t: Date | null }>(
      `SELECT min(created_at) AS t FROM baton.jobs WHERE idempotency_key LIKE 'cron:%' AND created_at > $1`,
      [new Date(at)],
    );
    const t = r.rows[0]?.t;
    if (t) return t.getTime() - at;
    await sleep(20);
  }
  return Number.NaN;
}

async function unfinished(h: Harness): Promise<number> {
  const r = await h.admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM baton.jobs WHERE idempotency_key LIKE 'cron:%' AND state NOT IN ('succeeded','dead_lettered','cancelled')`,
  );
  return r.rows[0]!.n;
}

/** Schedule id -> its jobs. */
async function cronJobs(h: Harness): Promise<Map<string, CronJob[]>> {
  const r = await h.admin.query<{ key: string; run_at: Date; created_at: Date; state: string }>(
    `SELECT idempotency_key AS key, run_at, created_at, state FROM baton.jobs WHERE idempotency_key LIKE 'cron:%' ORDER BY run_at`,
  );
  const out = new Map<string, CronJob[]>();
  for (const row of r.rows) {
    const id = row.key.split(':')[1]!;
    out.set(id, [
      ...(out.get(id) ?? []),
      { key: row.key, runAt: row.run_at.getTime(), createdAt: row.created_at.getTime(), state: row.state },
    ]);
  }
  return out;
}
