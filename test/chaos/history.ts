// The chaos history: record shapes workers and the runner append (one JSON
// object per line) and a line-at-a-time appender. Records are written BEFORE
// the effect they describe where possible, so a killed process still counts.

import { appendFileSync, closeSync, existsSync, openSync, readFileSync } from 'node:fs';

/** A handler run began ('start', written before the handler) or finished ('end'). */
export interface ExecRecord {
  type: 'start' | 'end';
  jobId: string;
  token: string;
  worker: string;
  at: number;
  /**
   * For 'end': how the handler finished. 'cancelled': it stopped on a cancel request (its signal
   * aborted with a JobCancelledError); 'aborted': on lease loss or the drain deadline.
   */
  outcome?: 'ok' | 'error' | 'aborted' | 'cancelled';
  /** For 'start' of a cron occurrence's job: its key, run_at and created_at (ms), kept after retention deletes the row. */
  key?: string;
  runAt?: number;
  createdAt?: number;
}

/**
 * A cancel the runner asked for (admin.cancel): 'requested' (the job was leased or running: the
 * request recorded under lease `token`), 'cancelled' (it was pending: cancelled at once; `token`
 * its last lease's, or null), 'refused' (already finished), 'indeterminate' (no answer).
 */
export interface CancelRecord {
  type: 'cancel';
  jobId: string;
  status: 'requested' | 'cancelled' | 'refused' | 'indeterminate';
  token: string | null;
  /** When the request was sent, and when its answer arrived. */
  sentAt: number;
  at: number;
}

/** An outcome write attempt and how many rows it changed (0 = fenced off). */
export interface WriteRecord {
  type: 'write';
  kind: 'complete' | 'fail' | 'heartbeat' | 'start' | 'release';
  jobId: string;
  token: string;
  worker: string;
  /** 1 accepted, 0 fenced off; null when the statement errored (it may or may not have committed). */
  rowsAffected: number | null;
  /** When the statement was sent (before the database could commit it). */
  sentAt: number;
  /** When the answer (or error) arrived. */
  at: number;
  error?: string;
}

/** A fault injected by the runner; inFlight is read from the database at fault time. */
export interface FaultRecord {
  type: 'fault';
  kind: string;
  /** The faulted worker; absent for faults hitting everyone (PG restart, loss). */
  worker?: string;
  at: number;
  /** End of the fault window (heal), when it lasts. */
  until?: number;
  inFlight: string[];
}

/** An enqueue attempt: 'ok' (acknowledged), 'indeterminate' (timeout/reset), 'failed' (definite error). */
export interface EnqueueRecord {
  type: 'enqueue';
  key: string;
  status: 'ok' | 'indeterminate' | 'failed';
  jobId?: string;
  /** For 'ok': whether this attempt created the job (false: the key already had one, e.g. an earlier attempt's lost ack). */
  created?: boolean;
  /** For 'ok': which attempt for this key got the ack (1 = first). */
  attempt?: number;
  at: number;
}

/**
 * An error the engine reported on its 'error' event (a background claim, heartbeat, outcome
 * write, listener...), in a worker or the producer. With no fault active there should be none.
 */
export interface ErrorRecord {
  type: 'error';
  worker: string;
  where: string;
  /** The BatonError code, when it has one (DB_UNAVAILABLE, INTERNAL...). */
  code?: string;
  message: string;
  at: number;
}

/**
 * A workflow step's side effect in the workflow scenario: 'start' when the step function begins
 * (before its effect), 'end' once the effect is done (before the step's output is committed).
 */
export interface EffectRecord {
  type: 'wf-effect';
  phase: 'start' | 'end';
  runId: string;
  key: string;
  token: string;
  worker: string;
  at: number;
}

/** A worker started (true) or stopped (false) leading, by its own 'leadership' event. */
export interface LeadershipRecord {
  type: 'leadership';
  worker: string;
  leader: boolean;
  at: number;
}

/**
 * A statement of the leader lease (acquire, renew) or a leader-only write fenced by its epoch
 * (the ticker's fenced transaction, the retention and outbox purges, worker pruning), read off
 * the wire (leader-recorder.ts).
 */
export interface LeaderWriteRecord {
  type: 'leader-write';
  kind: 'acquire' | 'renew' | 'fence' | 'job-purge' | 'outbox-purge' | 'worker-prune';
  worker: string;
  /** The epoch the statement carried (acquire: the one it got, if any). */
  epoch: string | null;
  /** Whether it took or changed anything (fence: whether the fence held); null when it errored. */
  changed: boolean | null;
  sentAt: number;
  at: number;
  error?: string;
}

export type HistoryRecord =
  | ExecRecord
  | WriteRecord
  | FaultRecord
  | EnqueueRecord
  | ErrorRecord
  | EffectRecord
  | LeadershipRecord
  | LeaderWriteRecord
  | CancelRecord;

/** An engine 'error' event as a history record. */
export function errorRecord(worker: string, e: { where: string; error: unknown }, at = Date.now()): ErrorRecord {
  const err = e.error as { code?: unknown; message?: unknown } | null | undefined;
  const code = typeof err?.code === 'string' ? err.code : undefined;
  return { type: 'error', worker, where: e.where, ...(code ? { code } : {}), message: String(err?.message ?? e.error).slice(0, 300), at };
}

/** Appends records synchronously (one write(2) per line, O_APPEND), so a SIGKILL loses at most the line being built. */
export class HistoryLog {
  readonly path: string;
  constructor(path: string) {
    this.path = path;
    if (!existsSync(path)) closeSync(openSync(path, 'a'));
  }
  append(rec: HistoryRecord): void {
    appendFileSync(this.path, `${JSON.stringify(rec)}\n`);
  }
}

/** Reads a JSONL history; a torn last line (process killed mid-write) is skipped. */
export function readHistory(...paths: string[]): HistoryRecord[] {
  const out: HistoryRecord[] = [];
  for (const p of paths) {
    if (!existsSync(p)) continue;
    for (const line of readFileSync(p, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      try {
        out.push(JSON.parse(line) as HistoryRecord);
      } catch {
        // torn line from a killed writer
      }
    }
  }
  return out;
}
