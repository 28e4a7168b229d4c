// How an execution ends short of its function returning (a wait gave the job back, the run was
// cancelled or finished elsewhere, a step threw), and outputs as the JSON text the store keeps:
// an output that cannot be stored is a terminal error, never a retry.

import type { Refusal, RunLease } from '../../driver/workflow-store.ts';
import { LeaseLostError, OutcomeWritten, TerminalError } from '../../types/errors.ts';
import { jsonTextHasNul } from '../job-spec.ts';

/** The execution ended because the run waits: the job was given back. */
export class Suspended extends OutcomeWritten {}

/** The execution ends without error: the run was cancelled or finished elsewhere. */
export class Stop extends Error {
  constructor(readonly result: unknown) {
    super('workflow execution stopped');
  }
}

/** A step's function threw. The cause keeps what it threw (TerminalError included). */
export class StepFailedError extends Error {
  constructor(key: string, cause: unknown) {
    const message = cause instanceof Error ? cause.message : String(cause);
    super(`step "${key}" failed: ${message}`, { cause });
    this.name = 'StepFailedError';
  }
}

/** What the job ends with when the run refused this execution's write; throws when the lease is gone. */
export function stopOrThrow(r: Refusal, lease: RunLease): unknown {
  if (r.kind === 'lease_lost') throw new LeaseLostError(lease.jobId, lease.token);
  return stopResult(r);
}

export function stopResult(r: Exclude<Refusal, { kind: 'lease_lost' }>): unknown {
  if (r.kind === 'cancelled') return { cancelled: true };
  if (r.kind === 'superseded') return { superseded: true };
  if (r.kind === 'timed_out') return { timedOut: true };
  return r.output;
}

export function serialise(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value === undefined ? null : value);
  } catch (error) {
    throw new TerminalError(`${what} is not JSON-serialisable`, { cause: error });
  }
  if (text === undefined) return 'null';
  if (jsonTextHasNul(text)) throw new TerminalError(`${what} contains NUL (\\u0000) characters`);
  return text;
}
