// What a handler sees and returns. A handler runs at least once per job; it
// must be idempotent and may pass ctx.token on as an idempotency key.

import type { JobProgress, LeasedJob } from '../types/job.ts';

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
  /**
   * Reports how far the job has got: a number from 0 to 100, or a JSON object of at most
   * PROGRESS_MAX_BYTES (2,048) bytes as JSON. Returns at once: the latest value is stored with
   * the next heartbeat (calls in between replace each other), fenced by this lease, so nothing
   * is stored once the lease is lost. A value reported in the last heartbeat interval before the
   * handler returns may not be stored.
   * @throws BatonError INVALID_ARGUMENT for any other value (details.limitBytes when too large).
   */
  progress(value: JobProgress): void;
}

/** A job handler. The resolved value (JSON-serialisable) is stored as the job's result. */
export type Handler<P = unknown> = (ctx: JobContext<P>) => Promise<unknown> | unknown;

/** Job type to handler: the `handlers` option. */
// biome-ignore lint/suspicious/noExplicitAny: a map holds handlers typed for their own payloads; Handler<unknown> would refuse them (parameters are contravariant).
export type HandlerMap = Readonly<Record<string, Handler<any>>>;
