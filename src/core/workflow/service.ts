// Workflows: the workflow functions this process defines (each is the handler of its own job
// type, `workflow:<name>`, and is recorded in the database's registry of defined workflows when
// the engine starts), and the producer and operator side of runs: start by name (any workflow
// the registry knows, defined here or not), events, reads, cancel and replay. Execution itself
// is execution.ts.

import { z } from 'zod';
import type { Queryable } from '../../driver/queryable.ts';
import type { RunForAction, WorkflowStore } from '../../driver/workflow-store.ts';
import { BatonError } from '../../types/errors.ts';
import { type EnqueueResult, isJobId, type JobSpec } from '../../types/job.ts';
import {
  type ChildSpec,
  type InputSchema,
  type ListRunsFilter,
  RUN_STATES,
  type RunDetail,
  type RunState,
  type RunSummary,
  type SendEventResult,
  type StartRunOptions,
  type StartRunResult,
  type WorkflowFn,
  type WorkflowOptions,
  type WorkflowRunsApi,
} from '../../types/workflow.ts';
import { assertJobId, assertListCursor, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, LIST_OFFSET_MAX } from '../admin.ts';
import { nameSchema } from '../config.ts';
import type { Handler } from '../handler.ts';
import { MAX_ATTEMPTS_MAX, windowOf } from '../job-spec.ts';
import { givenTrace } from '../producer.ts';
import type { TraceCarrier, Tracing } from '../tracing.ts';
import { WorkflowBatcher } from './batcher.ts';
import { startChildren } from './children.ts';
import { executeRun, type WorkflowCounters, wakeParent } from './execution.ts';
import { inputRefusal, invalid, isInputSchema, jsonText } from './input.ts';
import {
  jobTypeOf,
  keySchema,
  recordStart,
  runTimeoutSchema,
  type StartParams,
  startSchema,
  WORKFLOW_JOB_TYPE_PREFIX,
  wakesQueue,
} from './start.ts';

const LIVE_RUN_STATES: ReadonlySet<RunState> = new Set(['running', 'sleeping', 'waiting', 'blocked']);
// A blocked run's replay is its resume: it runs again from its history under the code deployed now.
const REPLAYABLE_RUN_STATES: ReadonlySet<RunState> = new Set(['dead_lettered', 'cancelled', 'blocked']);

const optionsSchema = z
  .object({
    queue: nameSchema.optional(),
    maxAttempts: z.number().int().min(1).max(MAX_ATTEMPTS_MAX).optional(),
    input: z.custom<InputSchema>(isInputSchema, 'must be a schema with parse(value), a zod schema for instance').optional(),
    runTimeoutMs: runTimeoutSchema.optional(),
  })
  .strict();

interface Definition {
  fn: WorkflowFn<never>;
  queue: string;
  maxAttempts: number;
  input: InputSchema | undefined;
  runTimeoutMs: number | null;
}

/** Where a run of a workflow goes: its driving job's queue and attempt budget, and its default timeout. */
type Target = Pick<Definition, 'queue' | 'maxAttempts' | 'runTimeoutMs'>;

export interface WorkflowsDeps {
  store: WorkflowStore;
  /** The engine's handler map: a workflow registers its job type's handler here. */
  handlers: Record<string, Handler>;
  wake: (queue: string) => void;
  /** Enqueues a plain job a run awaits (ctx.all with { job }). */
  enqueue: (spec: JobSpec) => Promise<EnqueueResult>;
  /** The NOTIFY channel of a queue. */
  channelOf: (queue: string) => string;
  /** The active trace context, stored with a run's driving job (as enqueue does for a job). */
  captureTrace?: () => TraceCarrier | null;
  /** The engine's tracing: each step executed gets a span (absent: none). */
  tracing?: Pick<Tracing, 'startStep'>;
}

export class Workflows implements WorkflowRunsApi {
  readonly counters: WorkflowCounters = {
    stepsExecuted: 0,
    stepReplaysAvoided: 0,
    resumes: { sleep: 0, event: 0, timeout: 0, retry: 0 },
  };
  readonly #d: WorkflowsDeps;
  readonly #defs = new Map<string, Definition>();
  /** Executions in progress here, by run: a cancel from this process aborts their steps at once. */
  readonly #running = new Map<string, AbortController>();
  /** One per engine: executions of every workflow defined here share its statements. */
  readonly batcher: WorkflowBatcher;

  constructor(deps: WorkflowsDeps) {
    this.#d = deps;
    this.batcher = new WorkflowBatcher(deps.store);
  }

  /** Defines `fn` as workflow `name`. Define workflows before start(): the worker advertises them and the registry records them then. */
  define<I, O>(name: string, fn: WorkflowFn<I, O>, opts: WorkflowOptions = {}): void {
    const parsedName = nameSchema.safeParse(jobTypeOf(name));
    if (!parsedName.success || typeof name !== 'string' || name.length === 0) {
      throw new BatonError('INVALID_ARGUMENT', `invalid workflow name ${JSON.stringify(String(name).slice(0, 40))}`);
    }
    if (typeof fn !== 'function') throw new BatonError('INVALID_ARGUMENT', `workflow "${name}": the definition must be a function`);
    const o = optionsSchema.safeParse(opts);
    if (!o.success) throw invalid(`options of workflow "${name}"`, o.error);
    if (this.#defs.has(name)) throw new BatonError('INVALID_ARGUMENT', `workflow "${name}" is already defined`);
    const schema = o.data.input;
    const def: Definition = {
      fn: fn as WorkflowFn<never>,
      queue: o.data.queue ?? 'default',
      maxAttempts: o.data.maxAttempts ?? 5,
      input: schema,
      runTimeoutMs: o.data.runTimeoutMs ?? null,
    };
    this.#defs.set(name, def);
    const deps = {
      store: this.#d.store,
      batch: this.batcher,
      counters: this.counters,
      wake: this.#d.wake,
      startChildren: (parent: { runId: string; tenantId: string }, key: string, children: ChildSpec[]) =>
        startChildren({ ...this.#d, target: (n: string) => this.#target(n) }, { ...parent, queue: def.queue }, key, children),
      running: this.#running,
      ...(this.#d.tracing ? { tracing: this.#d.tracing } : {}),
      // The starting process may not know the schema (another process, HTTP, cron): a run's first
      // execution checks the stored input (executeRun), and a refused one dead-letters at once.
      ...(schema ? { checkInput: (input: unknown) => inputRefusal(schema, input) } : {}),
    };
    this.#d.handlers[jobTypeOf(name)] = (ctx) => executeRun(def.fn as WorkflowFn, ctx, deps);
  }

  /** A driving job dead-lettered: a parent waiting for its run is due now. */
  jobDeadLettered(job: { jobType: string; payload: unknown }): void {
    if (!job.jobType.startsWith(WORKFLOW_JOB_TYPE_PREFIX)) return;
    const runId = String((job.payload as { runId?: unknown } | null)?.runId ?? '');
    if (isJobId(runId)) void wakeParent({ store: this.#d.store, wake: this.#d.wake }, runId);
  }

  names(): string[] {
    return [...this.#defs.keys()];
  }

  /** Records the workflows defined here in the registry (engine start); a repeat refreshes last_seen_at. */
  async register(): Promise<void> {
    const defs = [...this.#defs].map(([name, d]) => ({ name, queue: d.queue, maxAttempts: d.maxAttempts, runTimeoutMs: d.runTimeoutMs }));
    await this.#d.store.workflowRegister(defs);
  }

  /**
   * Where a run of `name` goes: this process's own definition, else the registry's row (a
   * workflow another process defines). A name no process ever registered is WORKFLOW_NOT_FOUND,
   * so a typo is refused rather than left waiting forever.
   */
  async #target(name: string): Promise<Target> {
    const local = typeof name === 'string' ? this.#defs.get(name) : undefined;
    if (local) return local;
    const row =
      typeof name === 'string' && nameSchema.safeParse(jobTypeOf(name)).success ? await this.#d.store.workflowDefinition(name) : null;
    if (!row) {
      throw new BatonError('WORKFLOW_NOT_FOUND', `no workflow named ${JSON.stringify(String(name).slice(0, 140))} is defined`, {
        details: { name },
      });
    }
    return row;
  }

  /** Why this process's schema of workflow `name` refuses `input`; null when it accepts it or this process has none. */
  inputRefusal(name: string, input: unknown): string | null {
    return inputRefusal(this.#defs.get(name)?.input, input);
  }

  /** Throws WORKFLOW_NOT_FOUND unless the registry (or this process) knows `name`. */
  async resolve(name: string): Promise<Target> {
    return this.#target(name);
  }

  async start(name: string, input: unknown, opts: StartRunOptions = {}): Promise<StartRunResult> {
    const o = startSchema.safeParse(opts);
    if (!o.success) throw invalid('run options', o.error);
    const inputText = jsonText(input, 'the workflow input');
    const def = await this.#target(name);
    // Defined here: refused before anything is written. The value checked is the one stored (jsonb-normalised).
    const schema = this.#defs.get(name)?.input;
    const why = schema ? inputRefusal(schema, JSON.parse(inputText)) : null;
    if (why !== null) {
      throw new BatonError('INVALID_ARGUMENT', `invalid input of workflow "${name}": ${why}`, { details: { name, issues: [why] } });
    }
    const window = windowOf(o.data);
    const res = await this.startOn(undefined, {
      name,
      target: def,
      tenantId: o.data.tenantId ?? 'default',
      input: inputText,
      idempotencyKey: o.data.idempotencyKey ?? null,
      runTimeoutMs: o.data.runTimeoutMs ?? def.runTimeoutMs,
      traceContext: o.data.traceContext === undefined ? (this.#d.captureTrace?.() ?? null) : givenTrace(o.data.traceContext),
      ...(window ? { window } : {}),
    });
    if (wakesQueue(res, window)) this.#d.wake(def.queue);
    return res;
  }

  /**
   * Records a run and its driving job on `client` (a transaction the caller holds; the cron
   * ticker's fenced one) or in a transaction of its own. The caller wakes the queue after commit.
   */
  startOn(client: Queryable | undefined, p: StartParams): Promise<StartRunResult> {
    return recordStart(this.#d.store, client, p);
  }

  async sendEvent(runId: string, name: string, payload: unknown, opts: { idempotencyKey?: string } = {}): Promise<SendEventResult> {
    assertJobId(runId);
    const n = keySchema.safeParse(name);
    if (!n.success) throw invalid('event name', n.error);
    const k = z.object({ idempotencyKey: keySchema.optional() }).strict().safeParse(opts);
    if (!k.success) throw invalid('event options', k.error);
    const res = await this.#d.store.workflowSendEvent({
      runId,
      name,
      payload: jsonText(payload, 'the event payload'),
      idempotencyKey: k.data.idempotencyKey ?? null,
    });
    if (!res) throw notFound(runId);
    if ('conflict' in res) {
      throw new BatonError('RUN_STATE_CONFLICT', `workflow run ${runId} is ${res.conflict}: it takes no more events`, {
        details: { id: runId, state: res.conflict },
      });
    }
    if (res.wokeQueue) this.#d.wake(res.wokeQueue);
    return { eventId: res.eventId, duplicate: res.duplicate, resumed: res.wokeQueue !== null };
  }

  /**
   * The run, or null. With `tenantId`, null for another tenant's run too, at the cost of an id
   * nobody has: the reads themselves are limited to the tenant.
   */
  async getRun(runId: string, opts: { tenantId?: string | undefined } = {}): Promise<RunDetail | null> {
    assertJobId(runId);
    return this.#d.store.workflowGetRun({ runId, tenantId: opts.tenantId });
  }

  async listRuns(filter: ListRunsFilter = {}): Promise<RunSummary[]> {
    const f = z
      .object({
        name: nameSchema.optional(),
        tenantId: nameSchema.optional(),
        state: z.enum(RUN_STATES).optional(),
        limit: z.number().int().min(1).max(LIST_LIMIT_MAX).optional(),
        offset: z.number().int().min(0).max(LIST_OFFSET_MAX).optional(),
        cursor: z.unknown().optional(),
      })
      .strict()
      .safeParse(filter);
    if (!f.success) throw invalid('run filter', f.error);
    const { cursor, ...rest } = f.data;
    const offset = rest.offset ?? 0;
    assertListCursor(cursor, offset);
    return this.#d.store.workflowListRuns({ ...rest, cursor, limit: rest.limit ?? LIST_LIMIT_DEFAULT, offset });
  }

  /** Cancels a running, sleeping, waiting or blocked run and its pending driving job; an execution in progress stops at its next step. */
  async cancelRun(runId: string): Promise<RunSummary> {
    assertJobId(runId);
    const res = await this.#d.store.workflowCancelRun({ runId, allowed: (r: RunForAction) => LIVE_RUN_STATES.has(r.state) });
    if (!res) throw notFound(runId);
    if ('conflict' in res) throw conflict(runId, res.conflict, 'cancelled', 'running, sleeping, waiting or blocked');
    // Another process's execution learns of it at its next heartbeat (its lease was revoked).
    this.#running.get(runId)?.abort(new BatonError('RUN_STATE_CONFLICT', `workflow run ${runId} was cancelled`));
    await wakeParent({ store: this.#d.store, wake: this.#d.wake }, runId);
    return res;
  }

  /** Resumes a dead-lettered, cancelled or blocked run at the step it stopped at; completed steps keep their outputs. */
  async replayRun(runId: string): Promise<RunSummary> {
    assertJobId(runId);
    const fallback = (name: string) => this.#defs.get(name);
    const res = await this.#d.store.workflowReplayRun({
      runId,
      allowed: (r) => REPLAYABLE_RUN_STATES.has(r.state),
      jobType: jobTypeOf,
      queue: (name) => fallback(name)?.queue,
      maxAttempts: (name) => fallback(name)?.maxAttempts,
    });
    if (!res) throw notFound(runId);
    if ('conflict' in res) throw conflict(runId, res.conflict, 'replayed', 'dead_lettered, cancelled or blocked');
    this.#d.wake(res.queue);
    return res.run;
  }

  countRunsByState(): Promise<Array<{ name: string; state: RunState; n: number }>> {
    return this.#d.store.workflowCountRunsByState();
  }
}

function notFound(runId: string): BatonError {
  return new BatonError('RUN_NOT_FOUND', `workflow run ${runId} not found`, { details: { id: runId } });
}

function conflict(runId: string, state: RunState, verb: string, allowed: string): BatonError {
  return new BatonError('RUN_STATE_CONFLICT', `workflow run ${runId} is ${state}; only a run that is ${allowed} can be ${verb}`, {
    details: { id: runId, state },
  });
}
