// The workflow scenario's checker: a pure function of the runs as the database holds them
// and the history (step side effects logged by the workers, faults logged by the runner and
// the workers' stall monitors). It proves:
//   1. no run lost: every run started exists and succeeded, with every step committed;
//   2. a committed step's output came from an effect that completed under the committing lease;
//   3. a committed step's side effect ran once, unless the worker of each extra completed
//      effect was hit by a fault (killed, paused, stalled, or PostgreSQL restarted) between
//      that effect's start and the time its commit would have been due;
//   4. an interrupted step (an effect that started more than once) ran at most once per fault
//      that could have interrupted it.

import type { EffectRecord, FaultRecord, HistoryRecord } from './history.ts';

export interface CheckedRun {
  id: string;
  state: string;
  /** Committed steps by key: the lease token and worker in their output, and when they were committed. */
  steps: Map<string, { token: string; worker: string; committedAt: number }>;
  /** The run's output, as stored. */
  output?: unknown;
}

/**
 * The parallel workflow's runs end with deterministic output: each succeeded run's output holds,
 * by key, exactly the output its committed step memo holds (the lease that ran it), whatever
 * order its parallel steps finished in and however many executions a fault cut off.
 */
export function checkOutputsByKey(runs: CheckedRun[], stepKeys: string[]): string[] {
  const violations: string[] = [];
  for (const run of runs) {
    if (run.state !== 'succeeded') continue;
    const out = (run.output ?? {}) as Record<string, { token?: string; worker?: string } | undefined>;
    for (const key of stepKeys) {
      const memo = run.steps.get(key);
      const got = out[key];
      if (!memo || got?.token !== memo.token || got?.worker !== memo.worker) {
        violations.push(`run ${run.id} step ${key}: output ${JSON.stringify(got)} is not its committed memo ${JSON.stringify(memo)}`);
      }
    }
  }
  return violations;
}

export interface WorkflowCheck {
  ok: boolean;
  violations: string[];
  runs: number;
  steps: number;
  /** Completed effects beyond one per step, each explained by a fault. */
  duplicateEffects: number;
  /** Effects started beyond one per step. */
  reexecutions: number;
  faults: number;
}

export function checkWorkflows(o: {
  started: string[];
  stepKeys: string[];
  runs: CheckedRun[];
  history: HistoryRecord[];
  leaseMs: number;
}): WorkflowCheck {
  const violations: string[] = [];
  const faults = o.history.filter((r): r is FaultRecord => r.type === 'fault');
  const effects = o.history.filter((r): r is EffectRecord => r.type === 'wf-effect');
  const byStep = new Map<string, EffectRecord[]>();
  for (const e of effects) {
    const k = `${e.runId}/${e.key}`;
    byStep.set(k, [...(byStep.get(k) ?? []), e]);
  }
  // A fault that can have stopped an execution of `worker` running from `from` to `to`.
  const hits = (worker: string, from: number, to: number) =>
    faults.filter((f) => (f.worker === undefined || f.worker === worker) && (f.until ?? f.at) >= from - 50 && f.at <= to);
  const byId = new Map(o.runs.map((r) => [r.id, r]));
  let steps = 0;
  let duplicateEffects = 0;
  let reexecutions = 0;
  for (const id of o.started) {
    const run = byId.get(id);
    if (!run) {
      violations.push(`run ${id}: lost (started, not in the database)`);
      continue;
    }
    if (run.state !== 'succeeded') violations.push(`run ${id}: ${run.state}, not succeeded`);
    for (const key of o.stepKeys) {
      const committed = run.steps.get(key);
      const recs = byStep.get(`${id}/${key}`) ?? [];
      if (!committed) {
        if (run.state === 'succeeded') violations.push(`run ${id} step ${key}: not committed in a succeeded run`);
        continue;
      }
      steps++;
      const ends = recs.filter((r) => r.phase === 'end');
      const starts = recs.filter((r) => r.phase === 'start');
      if (!ends.some((e) => e.token === committed.token)) {
        violations.push(`run ${id} step ${key}: committed by lease ${committed.token}, whose effect never completed`);
      }
      // Completed effects of other executions: each must have been cut off by a fault before its commit.
      for (const e of ends.filter((x) => x.token !== committed.token)) {
        duplicateEffects++;
        const start = starts.find((s) => s.token === e.token)?.at ?? e.at;
        // Its commit was due right after the effect; a fault up to a lease later can have stopped it
        // (a pause freezes the worker between the effect and the write, a restart fails the write).
        if (hits(e.worker, start, e.at + o.leaseMs).length === 0) {
          violations.push(
            `run ${id} step ${key}: side effect completed twice (leases ${e.token} and ${committed.token}) with no fault on ${e.worker} between`,
          );
        }
      }
      const extra = starts.length - 1;
      if (extra > 0) {
        reexecutions += extra;
        const first = Math.min(...starts.map((s) => s.at));
        const window = faults.filter(
          (f) =>
            (f.worker === undefined || starts.some((s) => s.worker === f.worker)) &&
            (f.until ?? f.at) >= first - 50 &&
            f.at <= committed.committedAt + o.leaseMs,
        );
        if (extra > window.length) {
          violations.push(
            `run ${id} step ${key}: started ${starts.length} times with only ${window.length} fault(s) that could interrupt it`,
          );
        }
      }
    }
  }
  const known = new Set(o.started);
  for (const r of o.runs) if (!known.has(r.id)) violations.push(`run ${r.id}: in the database but never started by the scenario`);
  return { ok: violations.length === 0, violations, runs: o.runs.length, steps, duplicateEffects, reexecutions, faults: faults.length };
}
