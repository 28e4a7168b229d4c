// What a handler sees and returns. A handler runs at least once per job; it
// must be idempotent and may pass ctx.token on as an idempotency key.

import type { LeasedJob } from '../types/job.ts';

/** What a handler is given: the payload, the job, its fencing token, an abort signal, lease checks (docs/library.md, Handlers). */
export interface JobContext<P = unknown> {
  /** The job's payload, as enqueued. */
  readonly payload: P;
  /** The job row as claimed (state 'leased' or 'running'). */
  readonly job: LeasedJob;
  /** This lease's fencing token (decimal string, strictly increasing per claim). */
  readonly token: string;
  /** Aborted when the lease is lost (or the drain deadline passes): stop work, nothing you return is recorded. */
  readonly signal: AbortSignal;
  /** Throws LeaseLostError when this worker no longer holds the lease. */
  checkLease(): void;
}

/** A job handler. The resolved value (JSON-serialisable) is stored as the job's result. */
export type Handler<P = unknown> = (ctx: JobContext<P>) => Promise<unknown> | unknown;

/** Job type to handler: the `handlers` option. */
// biome-ignore lint/suspicious/noExplicitAny: a map holds handlers typed for their own payloads; Handler<unknown> would refuse them (parameters are contravariant).
export type HandlerMap = Readonly<Record<string, Handler<any>>>;
