// Workflow metrics, read on scrape: runs by workflow and state (from the database), and
// this process's counters (steps executed, completed steps answered from history,
// executions resumed by cause) from baton.stats().

import { Counter, Gauge, type Registry } from 'prom-client';
import type { Baton } from '../../index.ts';

/** A failed read leaves the runs gauge empty and is reported to `onError` (the scrape still answers). */
export function registerWorkflowMetrics(registry: Registry, baton: Baton, onError: () => void): { settled: () => Promise<void> } {
  const registers = [registry];
  let last: Promise<void> = Promise.resolve();
  new Gauge({
    name: 'baton_workflow_runs',
    help: 'Workflow runs by workflow and state (read from the database on scrape)',
    labelNames: ['workflow', 'state'] as const,
    registers,
    collect() {
      this.reset();
      last = baton.workflows.countRunsByState().then(
        (rows) => {
          for (const r of rows) this.set({ workflow: r.name, state: r.state }, r.n);
        },
        () => onError(),
      );
      return last;
    },
  });
  const counter = (name: string, help: string, value: () => number) =>
    new Counter({
      name,
      help,
      registers,
      collect() {
        this.reset();
        this.inc(value());
      },
    });
  counter('baton_workflow_steps_executed_total', 'Workflow steps whose function ran and whose output was committed here', () => {
    return baton.stats().workflows.stepsExecuted;
  });
  counter(
    'baton_workflow_step_replays_avoided_total',
    'Completed workflow steps answered from the run history instead of run again',
    () => {
      return baton.stats().workflows.stepReplaysAvoided;
    },
  );
  new Counter({
    name: 'baton_workflow_resumes_total',
    help: 'Workflow executions that resumed a run, by cause (sleep, event, timeout, retry)',
    labelNames: ['cause'] as const,
    registers,
    collect() {
      this.reset();
      for (const [cause, n] of Object.entries(baton.stats().workflows.resumes)) this.inc({ cause }, n);
    },
  });
  return { settled: () => last };
}
