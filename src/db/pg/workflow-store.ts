// WorkflowStore on node-postgres, the execution's side: its load, step commits, waits,
// children and completion. Every write here is fenced by the driving job's lease token and the
// run still running (queries/workflow-fragments.ts); suspend's two statements share one short
// transaction, run row first. The producer's and operator's side is PgWorkflowRuns.

import type {
  Fenced,
  HistoryStep,
  LoadResult,
  Refusal,
  RunCompletion,
  RunLease,
  StepCommit,
  WaitRow,
  WorkflowDefinitionRow,
  WorkflowStore,
} from '../../driver/workflow-store.ts';
import type { RunDetail, RunState, RunSummary } from '../../types/workflow.ts';
import type { PgPoolLike, Queryable, QueryConfigLike } from './pool.ts';
import { type WorkflowExecutionQueries, workflowExecutionQueries } from './queries/workflow-execution.ts';
import { type WorkflowWaitQueries, workflowWaitQueries } from './queries/workflow-wait.ts';
import { queryRows } from './query-rows.ts';
import { inTransaction } from './transaction.ts';
import { type LoadRow, toLoaded } from './workflow-rows.ts';
import { PgWorkflowRuns } from './workflow-runs.ts';

export class PgWorkflowStore implements WorkflowStore {
  readonly #pool: PgPoolLike;
  readonly #exec: WorkflowExecutionQueries;
  readonly #wait: WorkflowWaitQueries;
  /** Start, events, cancel, replay and the reads. */
  readonly #runs: PgWorkflowRuns;

  /** `quotedSchema` must already be quoted (see quoteSchema). */
  constructor(pool: PgPoolLike, quotedSchema: string) {
    this.#pool = pool;
    this.#exec = workflowExecutionQueries(quotedSchema);
    this.#wait = workflowWaitQueries(quotedSchema);
    this.#runs = new PgWorkflowRuns(pool, quotedSchema);
  }

  #run<R>(query: QueryConfigLike, values: unknown[], on: Queryable = this.#pool): Promise<R[]> {
    return queryRows<R>(on, query, values);
  }

  workflowLoad(p: RunLease): Promise<LoadResult> {
    return this.#load([p]).then((r) => r[0] ?? null);
  }

  workflowLoadMany(p: RunLease[]): Promise<LoadResult[]> {
    return this.#load(p);
  }

  // One row goes out as the single-row statement (see the note on planning in queries/workflow-execution.ts).
  async #load(p: RunLease[]): Promise<LoadResult[]> {
    const one = p.length === 1 ? p[0] : undefined;
    const rows = await this.#run<LoadRow & { ord?: number }>(
      one ? this.#exec.load : this.#exec.loadMany,
      one ? [one.jobId, one.token, one.runId] : [p.map((x) => x.jobId), p.map((x) => x.token), p.map((x) => x.runId)],
    );
    const out: LoadResult[] = p.map(() => null);
    for (const r of rows) out[(r.ord ?? 1) - 1] = toLoaded(r);
    return out;
  }

  workflowCommitStep(p: StepCommit): Promise<Fenced<{ won: boolean; output: unknown }>> {
    return this.#commitSteps([p]).then((r) => r[0] as Fenced<{ won: boolean; output: unknown }>);
  }

  workflowCommitSteps(p: StepCommit[]): Promise<Array<Fenced<{ won: boolean; output: unknown }>>> {
    return this.#commitSteps(p);
  }

  async #commitSteps(p: StepCommit[]): Promise<Array<Fenced<{ won: boolean; output: unknown }>>> {
    const one = p.length === 1 ? p[0] : undefined;
    const rows = await this.#run<{ ord?: number; fenced_in: boolean; won: boolean; output: unknown }>(
      one ? this.#exec.commitStep : this.#exec.commitSteps,
      one
        ? [one.jobId, one.token, one.runId, one.name, one.occurrence, one.seq, one.output, one.startedAt]
        : [
            p.map((x) => x.jobId),
            p.map((x) => x.token),
            p.map((x) => x.runId),
            p.map((x) => x.name),
            p.map((x) => x.occurrence),
            p.map((x) => x.seq),
            p.map((x) => x.output),
            p.map((x) => x.startedAt),
          ],
    );
    const byOrd = new Map(rows.map((r) => [r.ord ?? 1, r]));
    return Promise.all(
      p.map(async (x, i): Promise<Fenced<{ won: boolean; output: unknown }>> => {
        const r = byOrd.get(i + 1);
        if (!r?.fenced_in) return { ok: false };
        if (r.won) return { ok: true, won: true, output: r.output };
        // Lost the race: the winner committed before the insert returned (or in this very
        // statement), so a new statement sees it.
        const winner = await this.workflowReadStep({ runId: x.runId, name: x.name, occurrence: x.occurrence });
        return { ok: true, won: false, output: winner?.status === 'succeeded' ? winner.output : undefined };
      }),
    );
  }

  async workflowReadStep(p: { runId: string; name: string; occurrence: number }) {
    const [r] = await this.#run<{ kind: HistoryStep['kind']; status: HistoryStep['status']; output: unknown }>(this.#exec.readStep, [
      p.runId,
      p.name,
      p.occurrence,
    ]);
    return r ?? null;
  }

  async workflowFailStep(p: Parameters<WorkflowStore['workflowFailStep']>[0]): Promise<void> {
    await this.#run(this.#exec.failStep, [p.jobId, p.token, p.runId, p.name, p.occurrence, p.seq, JSON.stringify(p.error), p.startedAt]);
  }

  async workflowArmWait(p: Parameters<WorkflowStore['workflowArmWait']>[0]): Promise<Fenced<WaitRow>> {
    const [r] = await this.#run<{ kind: WaitRow['kind']; status: WaitRow['status']; output: unknown; wake_at: Date | null; due: boolean }>(
      this.#wait.armWait,
      [
        p.jobId,
        p.token,
        p.runId,
        p.name,
        p.occurrence,
        p.seq,
        p.delayMs,
        p.until,
        p.kind,
        p.wait?.names[0] ?? null,
        p.wait?.names ?? null,
        p.wait?.match ?? null,
      ],
    );
    if (!r) return { ok: false };
    return { ok: true, kind: r.kind, status: r.status, output: r.output, wakeAt: r.wake_at, due: r.due };
  }

  workflowFinishWait(p: Parameters<WorkflowStore['workflowFinishWait']>[0]): Promise<Fenced<{ done: boolean; output: unknown }>> {
    return this.#endWait(this.#wait.finishWait, [p.jobId, p.token, p.runId, p.name, p.occurrence, p.stepKey]);
  }

  workflowSuspend(p: Parameters<WorkflowStore['workflowSuspend']>[0]) {
    return inTransaction(this.#pool, async (c, rollback): Promise<{ ok: true; queue: string; due: boolean } | { ok: false }> => {
      const runs = await this.#run(
        this.#wait.suspendRun,
        [p.jobId, p.token, p.runId, p.state, p.waitEvent, p.steps.map((s) => s.name), p.steps.map((s) => s.occurrence)],
        c,
      );
      if (runs.length === 0) {
        rollback();
        return { ok: false };
      }
      const [job] = await this.#run<{ queue: string; due: boolean }>(this.#wait.suspendJob, [p.jobId, p.token, p.runId], c);
      if (!job) {
        rollback();
        return { ok: false };
      }
      return { ok: true, queue: job.queue, due: job.due };
    });
  }

  async workflowMarkPatch(p: RunLease & { name: string; seq: number }): Promise<Fenced<object>> {
    const [r] = await this.#run<{ fenced_in: boolean }>(this.#exec.markPatch, [p.jobId, p.token, p.runId, p.name, p.seq]);
    return { ok: r?.fenced_in === true };
  }

  async workflowBlockRun(p: RunLease & { reason: string }): Promise<Fenced<object>> {
    const rows = await this.#run(this.#exec.blockRun, [p.jobId, p.token, p.runId, p.reason]);
    return { ok: rows.length > 0 };
  }

  workflowCompleteRun(p: RunCompletion): Promise<Fenced<{ output: unknown }>> {
    return this.#completeRuns([p]).then((r) => r[0] as Fenced<{ output: unknown }>);
  }

  workflowCompleteRuns(p: RunCompletion[]): Promise<Array<Fenced<{ output: unknown }>>> {
    return this.#completeRuns(p);
  }

  async #completeRuns(p: RunCompletion[]): Promise<Array<Fenced<{ output: unknown }>>> {
    const one = p.length === 1 ? p[0] : undefined;
    const rows = await this.#run<{ ord?: number; output: unknown }>(
      one ? this.#exec.completeRun : this.#exec.completeRuns,
      one
        ? [one.jobId, one.token, one.runId, one.output]
        : [p.map((x) => x.jobId), p.map((x) => x.token), p.map((x) => x.runId), p.map((x) => x.output)],
    );
    const out: Array<Fenced<{ output: unknown }>> = p.map(() => ({ ok: false }));
    for (const r of rows) out[(r.ord ?? 1) - 1] = { ok: true, output: r.output };
    return out;
  }

  async workflowChildOutcomes(p: { runIds: string[] }) {
    const rows = await this.#run<{ id: string; state: RunState; output: unknown; last_error: { name: string; message: string } | null }>(
      this.#wait.childOutcomes,
      [p.runIds],
    );
    return rows.map((r) => ({ id: r.id, state: r.state, output: r.output, lastError: r.last_error }));
  }

  workflowCompleteWait(p: Parameters<WorkflowStore['workflowCompleteWait']>[0]): Promise<Fenced<{ done: boolean; output: unknown }>> {
    return this.#endWait(this.#wait.completeWait, [p.jobId, p.token, p.runId, p.name, p.occurrence, p.output]);
  }

  /** The answer of finishWait and completeWait: fenced off, or whether this statement ended the wait. */
  async #endWait(query: QueryConfigLike, values: unknown[]): Promise<Fenced<{ done: boolean; output: unknown }>> {
    const [r] = await this.#run<{ fenced_in: boolean; done: boolean; output: unknown }>(query, values);
    if (!r?.fenced_in) return { ok: false };
    return { ok: true, done: r.done, output: r.output };
  }

  async workflowLinkChildJobs(p: { runId: string; jobIds: string[]; channel: string }): Promise<void> {
    await this.#run(this.#wait.linkChildJobs, [p.runId, p.jobIds, p.channel]);
  }

  async workflowJobOutcomes(p: { jobIds: string[] }) {
    const rows = await this.#run<{ id: string; state: string; result: unknown; last_error: { name: string; message: string } | null }>(
      this.#wait.jobOutcomes,
      [p.jobIds],
    );
    return rows.map((r) => ({ id: r.id, state: r.state, result: r.result, lastError: r.last_error }));
  }

  async workflowChildJobsSettling(p: { jobIds: string[] }): Promise<boolean> {
    const [r] = await this.#run<{ settling: boolean }>(this.#wait.childJobsSettling, [p.jobIds]);
    return r?.settling === true;
  }

  async workflowWakeParent(p: { runId: string }): Promise<string | null> {
    const [r] = await this.#run<{ queue: string }>(this.#wait.wakeParent, [p.runId]);
    return r?.queue ?? null;
  }

  async workflowWakeRun(p: { jobId: string }): Promise<string | null> {
    const [r] = await this.#run<{ queue: string }>(this.#wait.wakeJob, [p.jobId]);
    return r?.queue ?? null;
  }

  async workflowRefusal(p: RunLease): Promise<Refusal> {
    const [r] = await this.#run<{ state: string; output: unknown; ours: boolean | null; past_deadline: boolean; lease_current: boolean }>(
      this.#exec.why,
      [p.jobId, p.token, p.runId],
    );
    if (r?.ours === false) return { kind: 'superseded' };
    // A cancel revokes the driving job's lease: the run's state says why the write was refused.
    if (r?.state === 'cancelled') return { kind: 'cancelled' };
    if (r?.state === 'timed_out') return { kind: 'timed_out', wokeQueue: null };
    // Past its deadline and not yet recorded so: the clock decides, whoever holds the lease. A
    // blocked run stays blocked (it is no longer live; an operator replays or cancels it).
    if (r?.past_deadline && (r.state === 'running' || r.state === 'sleeping' || r.state === 'waiting')) {
      return { kind: 'timed_out', wokeQueue: await this.#runs.timeOut(p.runId) };
    }
    if (!r?.lease_current) return { kind: 'lease_lost' };
    if (r.state === 'succeeded') return { kind: 'finished', output: r.output };
    return { kind: 'lease_lost' };
  }

  workflowStartRun(p: Parameters<WorkflowStore['workflowStartRun']>[0], on?: Queryable) {
    return this.#runs.start(p, on);
  }

  workflowRegister(defs: WorkflowDefinitionRow[]): Promise<void> {
    return this.#runs.register(defs);
  }

  workflowDefinition(name: string) {
    return this.#runs.definition(name);
  }

  workflowSendEvent(p: Parameters<WorkflowStore['workflowSendEvent']>[0]) {
    return this.#runs.sendEvent(p);
  }

  workflowCancelRun(p: Parameters<WorkflowStore['workflowCancelRun']>[0]) {
    return this.#runs.cancel(p);
  }

  workflowReplayRun(p: Parameters<WorkflowStore['workflowReplayRun']>[0]) {
    return this.#runs.replay(p);
  }

  workflowGetRun(p: { runId: string; tenantId?: string | undefined }): Promise<RunDetail | null> {
    return this.#runs.get(p);
  }

  workflowListRuns(p: Parameters<WorkflowStore['workflowListRuns']>[0]): Promise<RunSummary[]> {
    return this.#runs.list(p);
  }

  workflowCountRunsByState() {
    return this.#runs.countByState();
  }

  workflowFoldRunCounts(): Promise<number> {
    return this.#runs.foldCounts();
  }
}
