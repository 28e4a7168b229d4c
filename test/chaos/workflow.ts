// The workflow chaos scenarios: runs of a four-step workflow (workflow-definition.ts) on the suite's real
// worker processes while workers are killed (kill -9), paused past their lease (SIGSTOP) and
// PostgreSQL restarts mid-run. workflow-checker.ts then proves from the runs table and the
// history that every run completed, no run was lost, a committed step's side effect ran once
// unless a fault cut off the execution that ran it again, and re-executions stay within the faults.
// The parallel variant (--scenario workflow-parallel) runs three of the steps together and kills
// workers more often; it also proves each run's output is exactly its committed step memos.

import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBaton } from '../../src/index.ts';
import { Harness } from './harness.ts';
import { readHistory } from './history.ts';
import { type CheckedRun, checkOutputsByKey, checkWorkflows, type WorkflowCheck } from './workflow-checker.ts';
import {
  CHAOS_PARALLEL_WORKFLOW,
  CHAOS_WORKFLOW,
  CHAOS_WORKFLOW_STEPS,
  chaosParallelWorkflow,
  chaosWorkflow,
} from './workflow-definition.ts';

const RUNS = 48;
const STEP_MS = 800;
const LEASE_MS = 3_000;
const DRAIN_DEADLINE_MS = 90_000;
type Fault = 'kill' | 'pause' | 'pg-restart';
const FAULTS: Fault[] = ['kill', 'pause', 'pg-restart', 'kill', 'pause', 'kill'];
/** Parallel steps: kill -9 is what a crash between sibling commits needs. */
const PARALLEL_FAULTS: Fault[] = ['kill', 'kill', 'pause', 'kill', 'kill', 'kill'];
const FAULT_GAP_MS = 2_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface WorkflowRunResult {
  ok: boolean;
  check: WorkflowCheck;
  violations: string[];
}

export async function runWorkflowScenario(o: { seed: number; useNetns: boolean; parallel?: boolean }): Promise<WorkflowRunResult> {
  const parallel = o.parallel === true;
  const name = parallel ? CHAOS_PARALLEL_WORKFLOW : CHAOS_WORKFLOW;
  const faults = parallel ? PARALLEL_FAULTS : FAULTS;
  const dir = mkdtempSync(path.join(os.tmpdir(), `baton-chaos-${name}-${o.seed}-`));
  console.log(`\n=== chaos ${name}: ${RUNS} runs of ${CHAOS_WORKFLOW_STEPS.length} steps, faults ${faults.join(', ')}; history=${dir}`);
  const h = new Harness({ dir, seed: o.seed, workers: 3, concurrency: 4, leaseMs: LEASE_MS, useNetns: o.useNetns });
  const violations: string[] = [];
  try {
    await h.setup();
    await h.startFleet();
    // A producer only: it defines the workflow to start runs of it, and never runs one.
    const producer = createBaton({ connectionString: h.cluster.url(), poolSize: 2 });
    producer.workflow(
      name,
      (parallel ? chaosParallelWorkflow : chaosWorkflow)('producer', () => undefined),
      {
        queue: 'chaos',
        maxAttempts: 100,
      },
    );
    try {
      const started: string[] = [];
      for (let i = 0; i < RUNS; i++) {
        const { run } = await producer.startWorkflow(name, { ms: STEP_MS }, { idempotencyKey: `chaos-${i}` });
        started.push(run.id);
      }
      const t0 = Date.now();
      for (const f of faults) {
        await sleep(FAULT_GAP_MS);
        const slot = await h.busiestSlot(h.slots[0]!);
        console.log(`    t=${((Date.now() - t0) / 1000).toFixed(1)}s ${f}${f === 'pg-restart' ? '' : ` ${slot.workerId}`}`);
        if (f === 'kill') await h.kill(slot);
        else if (f === 'pause') await h.pause(slot, LEASE_MS * 1.5);
        else await h.pgRestart();
      }
      const deadline = Date.now() + DRAIN_DEADLINE_MS;
      while ((await unfinished(h)) > 0) {
        if (Date.now() > deadline) {
          violations.push(`drain: runs unfinished ${DRAIN_DEADLINE_MS} ms after the last fault`);
          break;
        }
        await sleep(200);
      }
      const checked = await runs(h);
      const check = checkWorkflows({
        started,
        stepKeys: CHAOS_WORKFLOW_STEPS,
        runs: checked,
        history: readHistory(...h.logPaths),
        leaseMs: LEASE_MS,
      });
      violations.push(...check.violations);
      if (parallel) violations.push(...checkOutputsByKey(checked, CHAOS_WORKFLOW_STEPS));
      if (check.reexecutions === 0) violations.push('vacuous: no step ran twice, so the faults hit no execution');
      for (const c of h.crashes) violations.push(`crash: worker ${c} exited without being killed or stopped`);
      console.log(
        `    runs ${check.runs}, steps committed ${check.steps}; steps re-executed ${check.reexecutions}; side effects completed twice (each after a fault) ${check.duplicateEffects}; faults ${check.faults}`,
      );
      for (const v of violations) console.log(`    VIOLATION ${v}`);
      console.log(violations.length === 0 ? `    ${name}: VALID` : `    ${name}: INVALID (${violations.length})`);
      return { ok: violations.length === 0, check, violations };
    } finally {
      await h.stopWorkers().catch(() => undefined);
      await producer.stop();
    }
  } finally {
    await h.teardown();
  }
}

async function unfinished(h: Harness): Promise<number> {
  const r = await h.admin
    .query<{ n: number }>(`SELECT count(*)::int AS n FROM baton.workflow_runs WHERE state NOT IN ('succeeded', 'cancelled')`)
    .catch(() => ({ rows: [{ n: 1 }] }));
  return r.rows[0]!.n;
}

async function runs(h: Harness): Promise<CheckedRun[]> {
  const r = await h.admin.query<{ id: string; state: string; job_state: string | null; output: unknown }>(
    `SELECT r.id::text, r.state, j.state AS job_state, r.output FROM baton.workflow_runs r LEFT JOIN baton.jobs j ON j.id = r.job_id ORDER BY r.id`,
  );
  const s = await h.admin.query<{ run_id: string; name: string; output: { token: string; worker: string }; finished_at: Date }>(
    `SELECT run_id::text, name, output, finished_at FROM baton.workflow_steps WHERE status = 'succeeded' AND kind = 'step'`,
  );
  const steps = new Map<string, CheckedRun['steps']>();
  for (const row of s.rows) {
    const m = steps.get(row.run_id) ?? new Map();
    m.set(row.name, { token: row.output.token, worker: row.output.worker, committedAt: row.finished_at.getTime() });
    steps.set(row.run_id, m);
  }
  return r.rows.map((row) => ({
    id: row.id,
    // A run's dead-lettered state is its driving job's.
    state: row.job_state === 'dead_lettered' && row.state !== 'succeeded' ? 'dead_lettered' : row.state,
    steps: steps.get(row.id) ?? new Map(),
    output: row.output,
  }));
}
