// The producer's and operator's side of the workflow store: start, events, cancel, replay and
// the reads. Single statements where one suffices; start, cancel and replay run in short
// transactions on a checked-out client that lock the run row first, always in the order run
// row, then job row (the order of an execution's fence, so neither waits on the other in a circle).

import type { RunForAction, WorkflowDefinitionRow, WorkflowStore } from '../../driver/workflow-store.ts';
import type { RunDetail, RunState, RunSummary, StartRunResult } from '../../types/workflow.ts';
import { lockNamespace } from './lock-namespace.ts';
import type { PgPoolLike, Queryable, QueryConfigLike } from './pool.ts';
import { type JobWindowQueries, jobWindowQueries } from './queries/job-window.ts';
import { type WorkflowDeadlineQueries, workflowDeadlineQueries } from './queries/workflow-deadline.ts';
import { type WorkflowRunQueries, workflowRunQueries } from './queries/workflow-run.ts';
import { queryRows } from './query-rows.ts';
import { inTransaction } from './transaction.ts';
import { type DetailRow, type StepRow, type SummaryRow, toDetail, toSummary } from './workflow-rows.ts';
import { startWindowed } from './workflow-window.ts';

/** A run as an action locked it; traceContext: the JSON text of the trace it was started in (migration 0036). */
type LockedRun = RunForAction & { storedState: string; waitEvent: string | null; name: string; traceContext: string | null };

export class PgWorkflowRuns {
  readonly #pool: PgPoolLike;
  readonly #q: WorkflowRunQueries;
  readonly #deadline: WorkflowDeadlineQueries;
  /** The key lock and row of a debounced or throttled start (the jobs' own statements). */
  readonly #window: JobWindowQueries;
  /** The advisory-lock namespace that keeps folds of the run counts one at a time. */
  readonly #foldLock: number;

  /** `quotedSchema` must already be quoted (see quoteSchema). */
  constructor(pool: PgPoolLike, quotedSchema: string) {
    this.#pool = pool;
    this.#q = workflowRunQueries(quotedSchema);
    this.#deadline = workflowDeadlineQueries(quotedSchema);
    this.#window = jobWindowQueries(quotedSchema);
    this.#foldLock = lockNamespace('workflow-run-counts', quotedSchema);
  }

  #run<R>(query: QueryConfigLike, values: unknown[], on: Queryable = this.#pool): Promise<R[]> {
    return queryRows<R>(on, query, values);
  }

  #tx<T>(fn: (c: Queryable, rollback: () => void) => Promise<T>, begin?: string): Promise<T> {
    return inTransaction(this.#pool, fn, begin);
  }

  async #summary(runId: string, on?: Queryable): Promise<RunSummary> {
    const [row] = await this.#run<SummaryRow>(this.#q.summary, [runId], on);
    return toSummary(row as SummaryRow);
  }

  async register(defs: WorkflowDefinitionRow[]): Promise<void> {
    if (defs.length === 0) return;
    await this.#run(this.#q.register, [
      defs.map((d) => d.name),
      defs.map((d) => d.queue),
      defs.map((d) => d.maxAttempts),
      defs.map((d) => d.runTimeoutMs),
    ]);
  }

  async definition(name: string): Promise<Omit<WorkflowDefinitionRow, 'name'> | null> {
    const [r] = await this.#run<{ queue: string; max_attempts: number; run_timeout_ms: string | null }>(this.#q.definition, [name]);
    return r
      ? { queue: r.queue, maxAttempts: r.max_attempts, runTimeoutMs: r.run_timeout_ms === null ? null : Number(r.run_timeout_ms) }
      : null;
  }

  /** On `on` (a transaction the caller holds, the cron ticker's fenced one) when given. */
  start(p: Parameters<WorkflowStore['workflowStartRun']>[0], on?: Queryable): Promise<StartRunResult> {
    const { window } = p;
    if (window) {
      const windowed = (c: Queryable) => startWindowed(c, { run: this.#q, window: this.#window }, { ...p, window });
      return on ? windowed(on) : this.#tx(windowed);
    }
    const body = async (c: Queryable): Promise<StartRunResult> => {
      const trace = p.traceContext ? JSON.stringify(p.traceContext) : null;
      const [ins] = await this.#run<{ id: string }>(
        this.#q.insertRun,
        [p.name, p.tenantId, p.input, p.idempotencyKey, p.parentRunId ?? null, p.runTimeoutMs ?? null, trace],
        c,
      );
      if (!ins) {
        const [row] = await this.#run<SummaryRow>(this.#q.runByKey, [p.tenantId, p.idempotencyKey], c);
        return { run: toSummary(row as SummaryRow), duplicate: true };
      }
      const [job] = await this.#run<{ id: string }>(this.#q.insertJob, [p.tenantId, p.queue, p.jobType, ins.id, p.maxAttempts, trace], c);
      await this.#run(this.#q.linkJob, [ins.id, job?.id], c);
      return { run: await this.#summary(ins.id, c), duplicate: false };
    };
    return on ? body(on) : this.#tx(body);
  }

  async #lock(runId: string, c: Queryable): Promise<LockedRun | null> {
    const [r] = await this.#run<{
      stored_state: string;
      state: RunState;
      wait_event: string | null;
      job_id: string | null;
      job_state: string | null;
      name: string;
      trace_context: string | null;
    }>(this.#q.lockRun, [runId], c);
    if (!r) return null;
    return {
      state: r.state,
      storedState: r.stored_state,
      waitEvent: r.wait_event,
      jobId: r.job_id,
      jobState: r.job_state,
      name: r.name,
      traceContext: r.trace_context,
    };
  }

  async sendEvent(p: Parameters<WorkflowStore['workflowSendEvent']>[0]) {
    const [r] = await this.#run<{ state: RunState | null; event_id: string | null; old_id: string | null; woke_queue: string | null }>(
      this.#q.sendEvent,
      [p.runId, p.name, p.payload, p.idempotencyKey],
    );
    if (!r?.state) return null;
    if (r.event_id) return { eventId: r.event_id, duplicate: false, wokeQueue: r.woke_queue };
    // Nothing inserted: a repeated key (also after the run ended: a producer's retry is a
    // duplicate, not a conflict), or a run that takes no more events.
    let old = r.old_id;
    const over = r.state === 'succeeded' || r.state === 'cancelled' || r.state === 'timed_out';
    if (!old && p.idempotencyKey !== null && !over) {
      // The repeat committed while this statement waited for it: a new statement sees it.
      old = (await this.#run<{ id: string }>(this.#q.eventByKey, [p.runId, p.idempotencyKey]))[0]?.id ?? null;
    }
    if (old) return { eventId: old, duplicate: true, wokeQueue: null };
    if (over) return { conflict: r.state };
    throw new Error(`workflow run ${p.runId}: event neither inserted nor found`);
  }

  /** An action on the run, locked first: null when there is none, { conflict } (rolled back) when `allowed` refuses it. */
  #action<T>(
    p: { runId: string; allowed: (r: RunForAction) => boolean },
    fn: (run: LockedRun, c: Queryable) => Promise<T>,
  ): Promise<T | { conflict: RunState } | null> {
    return this.#tx(async (c, rollback) => {
      const run = await this.#lock(p.runId, c);
      if (!run) return null;
      if (!p.allowed(run)) {
        rollback();
        return { conflict: run.state };
      }
      return fn(run, c);
    });
  }

  cancel(p: Parameters<WorkflowStore['workflowCancelRun']>[0]) {
    return this.#action(p, async (run, c) => {
      await this.#run(this.#q.cancelRun, [p.runId], c);
      await this.#run(this.#q.cancelChildren, [p.runId], c);
      if (run.jobId) await this.#run(this.#q.cancelJob, [run.jobId], c);
      return this.#summary(p.runId, c);
    });
  }

  /**
   * Records a run past its deadline as timed_out (a repeat changes nothing) and, as a cancel
   * does, cancels its live descendants and the plain jobs they await that have not started: a
   * run that ended leaves no work behind (Temporal's default parent-close policy). Answers the
   * queue of a waiting parent made due, if any.
   */
  timeOut(runId: string): Promise<string | null> {
    return this.#tx(async (c) => {
      const [t] = await this.#run<{ timed_out: boolean; woke_queue: string | null }>(this.#deadline.timeOutRun, [runId], c);
      if (t?.timed_out) await this.#run(this.#q.cancelChildren, [runId], c);
      return t?.woke_queue ?? null;
    });
  }

  replay(p: Parameters<WorkflowStore['workflowReplayRun']>[0]) {
    return this.#action(p, async (run, c) => {
      let queue: string | undefined;
      if (run.jobId) [{ queue } = { queue: undefined }] = await this.#run<{ queue: string }>(this.#q.replayJob, [run.jobId], c);
      if (queue === undefined) {
        // The driving job is gone (retention, or deleted on success): a new one drives the replay,
        // in the trace the run was started in (migration 0036).
        const [{ tenantId }] = [await this.#summary(p.runId, c)];
        // The replaying process's own definition, else the registry's (a workflow defined elsewhere).
        const [reg] = await this.#run<{ queue: string; max_attempts: number }>(this.#q.definition, [run.name], c);
        queue = p.queue(run.name) ?? reg?.queue ?? 'default';
        const maxAttempts = p.maxAttempts(run.name) ?? reg?.max_attempts ?? 5;
        const [job] = await this.#run<{ id: string }>(
          this.#q.insertJob,
          [tenantId, queue, p.jobType(run.name), p.runId, maxAttempts, run.traceContext],
          c,
        );
        await this.#run(this.#q.linkJob, [p.runId, job?.id], c);
      }
      await this.#run(this.#q.replayRun, [p.runId], c);
      return { run: await this.#summary(p.runId, c), queue };
    });
  }

  /** The run and its steps from one snapshot: two reads apart could show a run waiting without the steps that led there. */
  get(p: { runId: string; tenantId?: string | undefined }): Promise<RunDetail | null> {
    return this.#tx((c) => this.#get(p, c), 'BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
  }

  async #get(p: { runId: string; tenantId?: string | undefined }, c: Queryable): Promise<RunDetail | null> {
    const scoped = p.tenantId !== undefined;
    const values = scoped ? [p.runId, p.tenantId] : [p.runId];
    const [[r], steps] = await Promise.all([
      this.#run<DetailRow>(scoped ? this.#q.getInTenant : this.#q.get, values, c),
      this.#run<StepRow>(scoped ? this.#q.stepsInTenant : this.#q.steps, values, c),
    ]);
    if (!r) return null;
    return toDetail(r, steps);
  }

  async list(p: Parameters<WorkflowStore['workflowListRuns']>[0]): Promise<RunSummary[]> {
    const values = [p.name ?? null, p.state ?? null, p.tenantId ?? null, p.limit, p.offset, p.cursor ?? null];
    const rows = await this.#run<SummaryRow>(this.#q.list, values);
    return rows.map(toSummary);
  }

  countByState() {
    return this.#run<{ name: string; state: RunState; n: number }>(this.#q.countByState, []);
  }

  async foldCounts(): Promise<number> {
    const [row] = await this.#run<{ n: number }>(this.#q.foldCounts, [this.#foldLock]);
    return row?.n ?? 0;
  }
}
