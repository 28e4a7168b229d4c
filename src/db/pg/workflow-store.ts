// WorkflowStore on node-postgres. Single statements where one suffices; the few
// multi-statement actions (start, suspend, event, cancel, replay) run in short
// transactions on a checked-out client that lock the run row first, always in the
// order run row, then job row.

import type {
  Fenced,
  HistoryStep,
  LoadedRun,
  LoadResult,
  Refusal,
  RunCompletion,
  RunForAction,
  RunLease,
  StepCommit,
  WaitRow,
  WorkflowStore,
} from '../../driver/workflow-store.ts';
import type { RunDetail, RunState, RunSummary, StepInfo } from '../../types/workflow.ts';
import { translatePgError } from './errors.ts';
import { checkOut, type PgPoolLike, type Queryable, type QueryConfigLike } from './pool.ts';
import { type WorkflowQueries, workflowQueries } from './queries/workflow.ts';

interface SummaryRow {
  id: string;
  name: string;
  tenant_id: string;
  state: RunState;
  job_id: string | null;
  progress: number;
  wait_event: string | null;
  wake_at: Date | null;
  replay_count: number;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

function toSummary(r: SummaryRow): RunSummary {
  return {
    id: r.id,
    name: r.name,
    tenantId: r.tenant_id,
    state: r.state,
    jobId: r.job_id,
    progress: r.progress,
    waitEvent: r.wait_event,
    wakeAt: r.wake_at,
    replayCount: r.replay_count,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
  };
}

interface LoadRow {
  marked: boolean;
  id: string;
  name: string;
  tenant_id: string;
  input: unknown;
  state: LoadedRun['state'];
  job_id: string | null;
  output: unknown;
  wait_event: string | null;
  parent_run_id: string | null;
  now_ms: number;
  event_ready: boolean;
  steps: HistoryStep[];
}

function toLoaded(r: LoadRow): LoadedRun & { marked: boolean } {
  return {
    marked: r.marked,
    id: r.id,
    name: r.name,
    tenantId: r.tenant_id,
    input: r.input,
    state: r.state,
    jobId: r.job_id,
    output: r.output,
    waitEvent: r.wait_event,
    parentRunId: r.parent_run_id,
    eventReady: r.event_ready,
    nowMs: Number(r.now_ms),
    steps: r.steps,
  };
}

const stepKey = (name: string, occurrence: number) => (occurrence === 1 ? name : `${name}#${occurrence}`);

export class PgWorkflowStore implements WorkflowStore {
  readonly #pool: PgPoolLike;
  readonly #q: WorkflowQueries;

  /** `quotedSchema` must already be quoted (see quoteSchema). */
  constructor(pool: PgPoolLike, quotedSchema: string) {
    this.#pool = pool;
    this.#q = workflowQueries(quotedSchema);
  }

  async #run<R>(query: QueryConfigLike, values: unknown[], on: Queryable = this.#pool): Promise<R[]> {
    try {
      return (await on.query<R>({ ...query, values })).rows;
    } catch (err) {
      throw translatePgError(err);
    }
  }

  /** `fn` runs in a transaction; it commits when `fn` resolves, rolls back when it throws or returns rollback. */
  async #tx<T>(fn: (c: Queryable, rollback: () => void) => Promise<T>, begin = 'BEGIN'): Promise<T> {
    const conn = await checkOut(this.#pool).catch((err: unknown) => {
      throw translatePgError(err);
    });
    let destroy = false;
    try {
      await conn.client.query({ text: begin });
      let rolledBack = false;
      const result = await fn(conn.client, () => {
        rolledBack = true;
      });
      await conn.client.query({ text: rolledBack ? 'ROLLBACK' : 'COMMIT' });
      return result;
    } catch (err) {
      await conn.client.query({ text: 'ROLLBACK' }).catch(() => {
        destroy = true;
      });
      throw translatePgError(err);
    } finally {
      conn.release(destroy);
    }
  }

  async #summary(runId: string, on?: Queryable): Promise<RunSummary> {
    const [row] = await this.#run<SummaryRow>(this.#q.summary, [runId], on);
    return toSummary(row as SummaryRow);
  }

  workflowStartRun(p: Parameters<WorkflowStore['workflowStartRun']>[0]) {
    return this.#tx(async (c) => {
      const [ins] = await this.#run<{ id: string }>(
        this.#q.insertRun,
        [p.name, p.tenantId, p.input, p.idempotencyKey, p.parentRunId ?? null],
        c,
      );
      if (!ins) {
        const [row] = await this.#run<SummaryRow>(this.#q.runByKey, [p.tenantId, p.idempotencyKey], c);
        return { run: toSummary(row as SummaryRow), duplicate: true };
      }
      const [job] = await this.#run<{ id: string }>(this.#q.insertJob, [p.tenantId, p.queue, p.jobType, ins.id, p.maxAttempts], c);
      await this.#run(this.#q.linkJob, [ins.id, job?.id], c);
      return { run: await this.#summary(ins.id, c), duplicate: false };
    });
  }

  workflowLoad(p: RunLease): Promise<LoadResult> {
    return this.#load([p]).then((r) => r[0] ?? null);
  }

  workflowLoadMany(p: RunLease[]): Promise<LoadResult[]> {
    return this.#load(p);
  }

  // One row goes out as the single-row statement (see the queries' note on planning).
  async #load(p: RunLease[]): Promise<LoadResult[]> {
    const one = p.length === 1 ? p[0] : undefined;
    const rows = await this.#run<LoadRow & { ord?: number }>(
      one ? this.#q.load : this.#q.loadMany,
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
      one ? this.#q.commitStep : this.#q.commitSteps,
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
    const [r] = await this.#run<{ kind: HistoryStep['kind']; status: HistoryStep['status']; output: unknown }>(this.#q.readStep, [
      p.runId,
      p.name,
      p.occurrence,
    ]);
    return r ?? null;
  }

  async workflowFailStep(p: Parameters<WorkflowStore['workflowFailStep']>[0]): Promise<void> {
    await this.#run(this.#q.failStep, [p.jobId, p.token, p.runId, p.name, p.occurrence, p.seq, JSON.stringify(p.error), p.startedAt]);
  }

  async workflowArmWait(p: Parameters<WorkflowStore['workflowArmWait']>[0]): Promise<Fenced<WaitRow>> {
    const [r] = await this.#run<{ kind: WaitRow['kind']; status: WaitRow['status']; output: unknown; wake_at: Date | null; due: boolean }>(
      this.#q.armWait,
      [p.jobId, p.token, p.runId, p.name, p.occurrence, p.seq, p.delayMs, p.until, p.kind, p.waitEvent],
    );
    if (!r) return { ok: false };
    return { ok: true, kind: r.kind, status: r.status, output: r.output, wakeAt: r.wake_at, due: r.due };
  }

  async workflowFinishWait(p: Parameters<WorkflowStore['workflowFinishWait']>[0]): Promise<Fenced<{ done: boolean; output: unknown }>> {
    const [r] = await this.#run<{ fenced_in: boolean; done: boolean; output: unknown }>(this.#q.finishWait, [
      p.jobId,
      p.token,
      p.runId,
      p.name,
      p.occurrence,
      p.waitEvent,
      p.stepKey,
    ]);
    if (!r?.fenced_in) return { ok: false };
    return { ok: true, done: r.done, output: r.output };
  }

  workflowSuspend(p: Parameters<WorkflowStore['workflowSuspend']>[0]) {
    return this.#tx(async (c, rollback): Promise<{ ok: true; queue: string; due: boolean } | { ok: false }> => {
      const runs = await this.#run(this.#q.suspendRun, [p.jobId, p.token, p.runId, p.state, p.waitEvent, p.name, p.occurrence], c);
      if (runs.length === 0) {
        rollback();
        return { ok: false };
      }
      const [job] = await this.#run<{ queue: string; due: boolean }>(this.#q.suspendJob, [p.jobId, p.token, p.runId, p.waitEvent], c);
      if (!job) {
        rollback();
        return { ok: false };
      }
      return { ok: true, queue: job.queue, due: job.due };
    });
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
      one ? this.#q.completeRun : this.#q.completeRuns,
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
      this.#q.childOutcomes,
      [p.runIds],
    );
    return rows.map((r) => ({ id: r.id, state: r.state, output: r.output, lastError: r.last_error }));
  }

  async workflowCompleteWait(p: Parameters<WorkflowStore['workflowCompleteWait']>[0]): Promise<Fenced<{ done: boolean; output: unknown }>> {
    const [r] = await this.#run<{ fenced_in: boolean; done: boolean; output: unknown }>(this.#q.completeWait, [
      p.jobId,
      p.token,
      p.runId,
      p.name,
      p.occurrence,
      p.output,
    ]);
    if (!r?.fenced_in) return { ok: false };
    return { ok: true, done: r.done, output: r.output };
  }

  async workflowLinkChildJobs(p: { runId: string; jobIds: string[]; channel: string }): Promise<void> {
    await this.#run(this.#q.linkChildJobs, [p.runId, p.jobIds, p.channel]);
  }

  async workflowJobOutcomes(p: { jobIds: string[] }) {
    const rows = await this.#run<{ id: string; state: string; result: unknown; last_error: { name: string; message: string } | null }>(
      this.#q.jobOutcomes,
      [p.jobIds],
    );
    return rows.map((r) => ({ id: r.id, state: r.state, result: r.result, lastError: r.last_error }));
  }

  async workflowWakeParent(p: { runId: string }): Promise<string | null> {
    const [r] = await this.#run<{ queue: string }>(this.#q.wakeParent, [p.runId]);
    return r?.queue ?? null;
  }

  async workflowWakeRun(p: { jobId: string }): Promise<string | null> {
    const [r] = await this.#run<{ queue: string }>(this.#q.wakeJob, [p.jobId]);
    return r?.queue ?? null;
  }

  async workflowRefusal(p: RunLease): Promise<Refusal> {
    const [r] = await this.#run<{ state: string; output: unknown; ours: boolean | null; lease_current: boolean }>(this.#q.why, [
      p.jobId,
      p.token,
      p.runId,
    ]);
    if (r?.ours === false) return { kind: 'superseded' };
    // A cancel revokes the driving job's lease: the run's state says why the write was refused.
    if (r?.state === 'cancelled') return { kind: 'cancelled' };
    if (!r?.lease_current) return { kind: 'lease_lost' };
    if (r.state === 'succeeded') return { kind: 'finished', output: r.output };
    return { kind: 'lease_lost' };
  }

  async #lock(
    runId: string,
    c: Queryable,
  ): Promise<(RunForAction & { storedState: string; waitEvent: string | null; name: string }) | null> {
    const [r] = await this.#run<{
      stored_state: string;
      state: RunState;
      wait_event: string | null;
      job_id: string | null;
      job_state: string | null;
      name: string;
    }>(this.#q.lockRun, [runId], c);
    if (!r) return null;
    return { state: r.state, storedState: r.stored_state, waitEvent: r.wait_event, jobId: r.job_id, jobState: r.job_state, name: r.name };
  }

  async workflowSendEvent(p: Parameters<WorkflowStore['workflowSendEvent']>[0]) {
    const [r] = await this.#run<{ state: RunState | null; event_id: string | null; old_id: string | null; woke_queue: string | null }>(
      this.#q.sendEvent,
      [p.runId, p.name, p.payload, p.idempotencyKey],
    );
    if (!r?.state) return null;
    if (r.event_id) return { eventId: r.event_id, duplicate: false, wokeQueue: r.woke_queue };
    // Nothing inserted: a repeated key (also after the run ended: a producer's retry is a
    // duplicate, not a conflict), or a run that takes no more events.
    let old = r.old_id;
    if (!old && p.idempotencyKey !== null && r.state !== 'succeeded' && r.state !== 'cancelled') {
      // The repeat committed while this statement waited for it: a new statement sees it.
      old = (await this.#run<{ id: string }>(this.#q.eventByKey, [p.runId, p.idempotencyKey]))[0]?.id ?? null;
    }
    if (old) return { eventId: old, duplicate: true, wokeQueue: null };
    if (r.state === 'succeeded' || r.state === 'cancelled') return { conflict: r.state };
    throw new Error(`workflow run ${p.runId}: event neither inserted nor found`);
  }

  workflowCancelRun(p: Parameters<WorkflowStore['workflowCancelRun']>[0]) {
    return this.#tx(async (c, rollback) => {
      const run = await this.#lock(p.runId, c);
      if (!run) return null;
      if (!p.allowed(run)) {
        rollback();
        return { conflict: run.state };
      }
      await this.#run(this.#q.cancelRun, [p.runId], c);
      await this.#run(this.#q.cancelChildren, [p.runId], c);
      if (run.jobId) await this.#run(this.#q.cancelJob, [run.jobId], c);
      return this.#summary(p.runId, c);
    });
  }

  workflowReplayRun(p: Parameters<WorkflowStore['workflowReplayRun']>[0]) {
    return this.#tx(async (c, rollback) => {
      const run = await this.#lock(p.runId, c);
      if (!run) return null;
      if (!p.allowed(run)) {
        rollback();
        return { conflict: run.state };
      }
      let queue: string | undefined;
      if (run.jobId) [{ queue } = { queue: undefined }] = await this.#run<{ queue: string }>(this.#q.replayJob, [run.jobId], c);
      if (queue === undefined) {
        // The driving job is gone (retention, or deleted on success): a new one drives the replay.
        const [{ tenantId }] = [await this.#summary(p.runId, c)];
        queue = p.queue(run.name);
        const [job] = await this.#run<{ id: string }>(
          this.#q.insertJob,
          [tenantId, queue, p.jobType(run.name), p.runId, p.maxAttempts(run.name)],
          c,
        );
        await this.#run(this.#q.linkJob, [p.runId, job?.id], c);
      }
      await this.#run(this.#q.replayRun, [p.runId], c);
      return { run: await this.#summary(p.runId, c), queue };
    });
  }

  /** The run and its steps from one snapshot: two reads apart could show a run waiting without the steps that led there. */
  workflowGetRun(p: { runId: string; tenantId?: string | undefined }): Promise<RunDetail | null> {
    return this.#tx((c) => this.#getRun(p, c), 'BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
  }

  async #getRun(p: { runId: string; tenantId?: string | undefined }, c: Queryable): Promise<RunDetail | null> {
    const scoped = p.tenantId !== undefined;
    const values = scoped ? [p.runId, p.tenantId] : [p.runId];
    const [[r], steps] = await Promise.all([
      this.#run<
        SummaryRow & {
          input: unknown;
          output: unknown;
          attempt: number | null;
          max_attempts: number | null;
          errors: RunDetail['errors'] | null;
          dead_letter_reason: string | null;
        }
      >(scoped ? this.#q.getInTenant : this.#q.get, values, c),
      this.#run<{
        name: string;
        occurrence: number;
        seq: number;
        kind: StepInfo['kind'];
        status: StepInfo['status'];
        attempts: number;
        output: unknown;
        error: unknown;
        wait_event: string | null;
        wake_at: Date | null;
        started_at: Date;
        finished_at: Date | null;
      }>(scoped ? this.#q.stepsInTenant : this.#q.steps, values, c),
    ]);
    if (!r) return null;
    return {
      ...toSummary(r),
      input: r.input,
      output: r.output,
      attempt: r.attempt,
      maxAttempts: r.max_attempts,
      errors: r.errors ?? [],
      deadLetterReason: r.dead_letter_reason,
      steps: steps.map((s) => ({
        key: stepKey(s.name, s.occurrence),
        name: s.name,
        occurrence: s.occurrence,
        seq: s.seq,
        kind: s.kind,
        status: s.status,
        attempts: s.attempts,
        output: s.output,
        error: s.error,
        waitEvent: s.wait_event,
        wakeAt: s.wake_at,
        startedAt: s.started_at,
        finishedAt: s.finished_at,
      })),
    };
  }

  async workflowListRuns(p: Parameters<WorkflowStore['workflowListRuns']>[0]): Promise<RunSummary[]> {
    const rows = await this.#run<SummaryRow>(this.#q.list, [p.name ?? null, p.state ?? null, p.tenantId ?? null, p.limit, p.offset]);
    return rows.map(toSummary);
  }

  workflowCountRunsByState() {
    return this.#run<{ name: string; state: RunState; n: number }>(this.#q.countByState, []);
  }
}
