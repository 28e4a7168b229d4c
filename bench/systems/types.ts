// What every system under test (Baton and the peers) provides to the harness, so all
// of them go through exactly the same workloads and the same database checks.

export type SystemName = 'baton' | 'graphile-worker' | 'pg-boss';

export interface Variant {
  /** Stable id used in file names and flags, e.g. baton-notify-cir. */
  id: string;
  system: SystemName;
  /** Human label for tables. */
  label: string;
  /** Options handed to the system (recorded in the results). */
  options: Record<string, unknown>;
  /** The interval at which it polls when nothing wakes it (ms), to read next to poll latency. */
  pollIntervalMs: number;
  /** Whether it wakes workers by LISTEN/NOTIFY. */
  notify: boolean;
  /** Notes for the report (why this configuration). */
  note: string;
}

/** Called at the start of each handler execution with the job's sequence number. */
export type OnJob = (seq: number, attempt: number) => void | Promise<void>;

export interface VerifyResult {
  ok: boolean;
  /** Rows the system shows as done / still queued. */
  done: number;
  remaining: number;
  detail: string;
}

export interface WorkerSide {
  /** Creates the schema (migrations) in the fresh database. */
  setup(): Promise<void>;
  /** Enqueues jobs with these sequence numbers, in batches (throughput set-up). */
  enqueueBulk(seqs: number[]): Promise<void>;
  start(onJob: OnJob): Promise<void>;
  stop(): Promise<void>;
  /** Jobs recorded as successfully finished in the database, out of `total` enqueued. */
  countDone(total: number): Promise<number>;
  /**
   * Checks the database against the handler executions: every executed seq done exactly
   * once, nothing else done, nothing failed. `executed` may hold duplicates (then not ok).
   */
  verify(executed: readonly number[], enqueued: number): Promise<VerifyResult>;
  close(): Promise<void>;
}

export interface ProducerSide {
  open(): Promise<void>;
  /** Enqueues one job; resolves once the enqueue has committed. */
  enqueue(seq: number): Promise<void>;
  close(): Promise<void>;
}

export const QUEUE = 'bench';
export const JOB_TYPE = 'noop';

/** Shared check: executions are exactly the given set, each once. */
export function checkExecutions(executed: readonly number[], expected: ReadonlySet<number>): string | null {
  const seen = new Set<number>();
  for (const s of executed) {
    if (seen.has(s)) return `seq ${s} executed more than once`;
    if (!expected.has(s)) return `seq ${s} executed but not recorded as done`;
    seen.add(s);
  }
  if (seen.size !== expected.size) return `${expected.size - seen.size} job(s) done in the database without a recorded execution`;
  return null;
}
