// The workflow the chaos workflow scenario runs: four steps, each a side effect (a timed wait
// that gives up on its signal) logged before and after, whose output names the lease that ran it.

import type { WorkflowFn } from '../../src/index.ts';
import type { EffectRecord } from './history.ts';

export const CHAOS_WORKFLOW = 'chaos-workflow';
export const CHAOS_WORKFLOW_STEPS = ['reserve', 'charge', 'ship', 'notify'];

export function chaosWorkflow(worker: string, record: (r: EffectRecord) => void): WorkflowFn<{ ms: number }> {
  return async (ctx) => {
    const out: unknown[] = [];
    for (const key of CHAOS_WORKFLOW_STEPS) {
      out.push(
        await ctx.step(key, async (step) => {
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
        }),
      );
    }
    return out;
  };
}
