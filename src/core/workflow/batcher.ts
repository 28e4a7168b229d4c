// Sends what concurrent executions in this process ask of the database at the same time
// together, as the completer does for job outcomes: loads, step commits and run completions
// that arrive in the same turn of the event loop (or while the previous batch of their kind
// is in flight) go out as one statement per kind, one transaction and one WAL flush, every
// row fenced by its own lease. Each execution awaits its own row's answer before it goes
// on, so "commit the step's output, then advance the run" holds per run as before; only
// the round trip and the commit are shared.

import type { Fenced, LoadResult, RunCompletion, RunLease, StepCommit, WorkflowStore } from '../../driver/workflow-store.ts';

/** Rows per statement at most; more wait for the next one. */
export const BATCH_MAX = 200;

interface Pending<I, R> {
  item: I;
  resolve: (r: R) => void;
  reject: (err: unknown) => void;
}

class Batch<I, R> {
  readonly #send: (items: I[]) => Promise<R[]>;
  readonly #max: number;
  #buffer: Array<Pending<I, R>> = [];
  #scheduled = false;
  #flushing = false;
  /** Statements sent, for tests. */
  statements = 0;

  constructor(send: (items: I[]) => Promise<R[]>, max: number) {
    this.#send = send;
    this.#max = max;
  }

  submit(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#buffer.push({ item, resolve, reject });
      if (this.#scheduled || this.#flushing) return;
      this.#scheduled = true;
      // setImmediate lets the other executions of this turn join the batch.
      setImmediate(() => {
        this.#scheduled = false;
        void this.#flush();
      });
    });
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      // What arrived while a batch was in flight goes out next, at once.
      while (this.#buffer.length > 0) await this.#sendBatch(this.#buffer.splice(0, this.#max));
    } finally {
      this.#flushing = false;
    }
  }

  async #sendBatch(batch: Array<Pending<I, R>>): Promise<void> {
    let results: R[];
    try {
      this.statements++;
      results = await this.#send(batch.map((p) => p.item));
    } catch (err) {
      if (batch.length === 1) {
        batch[0]?.reject(err);
        return;
      }
      // One bad row (say, a value jsonb refuses) fails the statement: send each row alone, so
      // only its own execution sees the error. Sending a row again is safe: a commit that did
      // land answers as the winner's output, a completion that did land as finished.
      await Promise.all(batch.map((p) => this.#sendBatch([p])));
      return;
    }
    for (const [i, p] of batch.entries()) p.resolve(results[i] as R);
  }
}

export class WorkflowBatcher {
  readonly #loads: Batch<RunLease, LoadResult>;
  readonly #steps: Batch<StepCommit, Fenced<{ won: boolean; output: unknown }>>;
  readonly #completions: Batch<RunCompletion, Fenced<{ output: unknown }>>;

  constructor(store: WorkflowStore, max = BATCH_MAX) {
    this.#loads = new Batch((p) => store.workflowLoadMany(p), max);
    this.#steps = new Batch((p) => store.workflowCommitSteps(p), max);
    this.#completions = new Batch((p) => store.workflowCompleteRuns(p), max);
  }

  load(p: RunLease): Promise<LoadResult> {
    return this.#loads.submit(p);
  }

  commitStep(p: StepCommit): Promise<Fenced<{ won: boolean; output: unknown }>> {
    return this.#steps.submit(p);
  }

  completeRun(p: RunCompletion): Promise<Fenced<{ output: unknown }>> {
    return this.#completions.submit(p);
  }

  /** Statements sent so far, by kind. */
  statements(): { loads: number; steps: number; completions: number } {
    return { loads: this.#loads.statements, steps: this.#steps.statements, completions: this.#completions.statements };
  }
}
