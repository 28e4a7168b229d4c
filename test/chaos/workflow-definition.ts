// The workflows the chaos workflow scenarios run: four steps, each a side effect (a timed wait
// that gives up on its signal) logged before and after, whose output names the lease that ran it.
// The sequential one runs them one after the other; the parallel one runs the last three
// together (Promise.all) and returns every step's output by key.

import type { StepContext, WorkflowContext, WorkflowFn } from '../../src/index.ts';
import type { EffectRecord } from './history.ts';

export const CHAOS_WORKFLOW = 'chaos-workflow';
export const CHAOS_PARALLEL_WORKFLOW = 'chaos-parallel-workflow';
export const CHAOS_WORKFLOW_STEPS = ['reserve', 'charge', 'ship', 'notify'];

type Record = (r: EffectRecord) => void;

function effect(ctx: WorkflowContext<{ ms: number }>, key: string, worker: string, record: Record) {
  return async (step: StepContext) => {
    const base = { type: 'wf-effect', runId: ctx.runId, key, token: ctx.token, worker } as const;
    record({ ...base, phase: 'start', at: Date.now() });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, ctx.input.ms);
      step.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          reject(step.signal.reason ?? new Error('aborted'));
        },
        { once: true },
      );
    });
    record({ ...base, phase: 'end', at: Date.now() });
    return { token: ctx.token, worker };
  };
}

export function chaosWorkflow(worker: string, record: Record): WorkflowFn<{ ms: number }> {
  return async (ctx) => {
    const out: unknown[] = [];
    for (const key of CHAOS_WORKFLOW_STEPS) out.push(await ctx.step(key, effect(ctx, key, worker, record)));
    return out;
  };
}

export function chaosParallelWorkflow(worker: string, record: Record): WorkflowFn<{ ms: number }> {
  return async (ctx) => {
    const [first, ...rest] = CHAOS_WORKFLOW_STEPS as [string, ...string[]];
    const out: { [key: string]: unknown } = { [first]: await ctx.step(first, effect(ctx, first, worker, record)) };
    const outputs = await Promise.all(rest.map((key) => ctx.step(key, effect(ctx, key, worker, record))));
    for (const [i, key] of rest.entries()) out[key] = outputs[i];
    return out;
  };
}
