// The builder form of a workflow, sugar over the code-first one: each .step(key, fn) adds
// a named step run in order by one workflow function; a step reads an earlier one's
// output with ctx.requireOutputOf(key). The run's output is every step's output by key.

import { TerminalError } from '../../types/errors.ts';
import type { StepContext, WorkflowContext, WorkflowFn } from '../../types/workflow.ts';

/** What a step of a built workflow is given: the step context, the run's input and the outputs of the steps before it. */
export interface BuilderStepContext<I = unknown> extends StepContext {
  readonly input: I;
  readonly runId: string;
  /** The committed output of an earlier step; a key that names none (yet) is a terminal error. */
  requireOutputOf<T = unknown>(key: string): T;
}

/** Defines a workflow step by step, `baton.workflow(name)` with no function (docs/workflows.md). */
export interface WorkflowBuilder<I = unknown> {
  step(key: string, fn: (ctx: BuilderStepContext<I>) => unknown): WorkflowBuilder<I>;
}

/** A builder and the workflow function that runs its steps (steps may be added until start()). */
export function workflowBuilder<I>(): { builder: WorkflowBuilder<I>; fn: WorkflowFn<I, Record<string, unknown>> } {
  const steps: Array<{ key: string; fn: (ctx: BuilderStepContext<I>) => unknown }> = [];
  const builder: WorkflowBuilder<I> = {
    step(key, fn) {
      if (steps.some((s) => s.key === key)) throw new TerminalError(`the builder already has a step "${key}"`);
      steps.push({ key, fn });
      return builder;
    },
  };
  const fn = async (ctx: WorkflowContext<I>) => {
    const outputs: Record<string, unknown> = {};
    for (const s of steps) {
      outputs[s.key] = await ctx.step(s.key, (step) =>
        s.fn({
          ...step,
          signal: step.signal,
          progress: step.progress,
          input: ctx.input,
          runId: ctx.runId,
          requireOutputOf: <T>(key: string): T => {
            if (!(key in outputs)) throw new TerminalError(`step "${s.key}" requires the output of "${key}", which has not run before it`);
            return outputs[key] as T;
          },
        }),
      );
    }
    return outputs;
  };
  return { builder, fn };
}
