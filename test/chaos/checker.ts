// A Jepsen total-queue style checker for Baton: from the final jobs table and
// the run's history it counts lost / recovered / unexpected / duplicated /
// stale-accepted / dead-lettered jobs and checks duplicates against the fault
// bound. The properties: nothing lost or invented, no stale write accepted, duplicates
// within the fault bound, no dead letters, and every cancel honoured: a job ends in the one
// terminal state that matches what its handler did, and a cancelled job never runs again.
// Pure function plus a small CLI.

import type { CancelRecord, EnqueueRecord, ErrorRecord, ExecRecord, FaultRecord, HistoryRecord, WriteRecord } from './history.ts';
import { readHistory } from './history.ts';

export interface FinalJob {
  id: string;
  state: string;
  /** Token of the last lease (the accepted outcome's token for a succeeded job). */
  leaseToken: string | null;
  idempotencyKey: string | null;
  /** Token the accepted result was produced under (chaos handlers return ctx.token). */
  resultToken?: string | null;
  /** Tokens of the job's error history, oldest first (one entry per failed or reaped lease). */
  errorTokens?: string[];
}

export interface CheckOptions {
  /** Dead letters are a violation unless allowed (test jobs have attempts to spare). Default false. */
  allowDeadLetters?: boolean;
  /**
   * A run with no fault must be quiet: any engine error or enqueue with an unknown outcome is
   * a violation (a healthy system failing requests, as a destroyed connection would). Default false.
   */
  requireQuiet?: boolean;
}

/** How long after a fault heals (and before it begins) its effects still explain an error. */
export const QUIET_GRACE_MS = 5_000;

export interface DuplicateBoundBreach {
  jobId: string;
  executions: number;
  faultsHitting: number;
}

export interface CheckResult {
  jobs: number;
  acked: number;
  indeterminate: number;
  /** Acknowledged enqueues whose job is missing or never reached a terminal state. */
  lost: number;
  /** Indeterminate enqueues whose job exists and succeeded anyway. */
  recovered: number;
  /** Jobs (or executions) no enqueue explains, or several jobs for one key. */
  unexpected: number;
  /** Keys acknowledged only after at least one attempt with an unknown outcome (reset, timeout, 5xx). */
  ambiguousAcks: number;
  /** Of those, keys whose acknowledging retry found the job already there: an earlier attempt had committed. */
  ambiguousCommitted: number;
  succeeded: number;
  deadLettered: number;
  /** Jobs executed more than once (retries after an accepted failure excluded). */
  duplicated: number;
  /** Executions beyond the first, summed over jobs. */
  duplicateExecutions: number;
  /** Σ over faults of the jobs in flight at the fault (and started inside its window). */
  duplicateBound: number;
  perJobBreaches: DuplicateBoundBreach[];
  executions: number;
  /** fenced: 0 rows; unknown: the statement errored (timeout, reset), outcome unknown to the worker. */
  /** fencedOutcomes: complete/fail/release writes that reached the database with a stale token (0 rows). */
  writes: { attempted: number; accepted: number; fenced: number; unknown: number; fencedOutcomes: number };
  /** Accepted outcome writes that did not carry the job's current token. */
  staleAccepted: number;
  /**
   * Engine errors and enqueues with an unknown outcome at times no fault explains (none active
   * within QUIET_GRACE_MS): trouble a healthy system made by itself.
   */
  unexplained: { errors: number; indeterminate: number; examples: string[] };
  faults: Record<string, number>;
  /**
   * Cancels asked for, by answer (requested: the job was running; cancelled: it was pending;
   * refused: already finished; unknown: no answer), and how the requested ones ended: cancelled
   * (the handler stopped on its signal, or nothing held the job any more) or succeeded (the
   * handler finished anyway); handlersStopped: handler runs that ended on the cancel signal.
   */
  cancels: {
    requested: number;
    cancelled: number;
    refused: number;
    unknown: number;
    endedCancelled: number;
    endedSucceeded: number;
    handlersStopped: number;
  };
  fractions: { lost: number; duplicated: number; okFrac: number; recovered: number };
  violations: string[];
  ok: boolean;
}

const TERMINAL = new Set(['succeeded', 'dead_lettered', 'cancelled']);
const OUTCOME_KINDS = new Set(['complete', 'fail', 'release']);
/** Faults that touch only the producers' side (lost HTTP acks): they cannot make a job run twice, so they add nothing to the duplicate bound. */
const PRODUCER_ONLY_FAULTS = new Set(['api-ack']);

/**
 * A 'stall' is recorded by a worker itself when its own timer ran far too late (the host did
 * not run it). A SIGSTOP 'pause' of that worker shows up as a stall too: that one is the
 * pause, counted once.
 */
function isPauseEcho(f: FaultRecord, faults: FaultRecord[]): boolean {
  if (f.kind !== 'stall') return false;
  return faults.some((p) => p.kind === 'pause' && p.worker === f.worker && p.at <= (f.until ?? f.at) && (p.until ?? p.at) >= f.at);
}
const frac = (n: number, d: number) => (d === 0 ? 0 : n / d);

function groupBy<T>(xs: T[], key: (x: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const x of xs) {
    const k = key(x);
    const list = m.get(k);
    if (list) list.push(x);
    else m.set(k, [x]);
  }
  return m;
}

/** Checks a finished, drained run. */
export function checkHistory(final: FinalJob[], history: HistoryRecord[], options: CheckOptions = {}): CheckResult {
  const violations: string[] = [];
  // One entry per key: a producer retries an indeterminate enqueue under the same key until acked.
  const rank = { ok: 2, indeterminate: 1, failed: 0 } as const;
  const enqByKey = new Map<string, EnqueueRecord>();
  for (const r of history) {
    if (r.type !== 'enqueue') continue;
    const seen = enqByKey.get(r.key);
    if (!seen || rank[r.status] > rank[seen.status]) enqByKey.set(r.key, r);
  }
  const enq = [...enqByKey.values()];
  const keysWithUnknown = new Set(
    history.filter((r): r is EnqueueRecord => r.type === 'enqueue' && r.status === 'indeterminate').map((r) => r.key),
  );
  let ambiguousAcks = 0;
  let ambiguousCommitted = 0;
  const execs = history.filter((r): r is ExecRecord => r.type === 'start' || r.type === 'end');
  const writes = history.filter((r): r is WriteRecord => r.type === 'write');
  const recorded = history.filter((r): r is FaultRecord => r.type === 'fault');
  const faults = recorded.filter((f) => !isPauseEcho(f, recorded));
  const byId = new Map(final.map((j) => [j.id, j]));
  const byKey = groupBy(
    final.filter((j) => j.idempotencyKey !== null),
    (j) => j.idempotencyKey!,
  );

  // Nothing lost or invented: enqueue acknowledgements against the table.
  let lost = 0;
  let recovered = 0;
  let unexpected = 0;
  const explained = new Set<string>();
  const acked = enq.filter((e) => e.status === 'ok');
  const indeterminate = enq.filter((e) => e.status === 'indeterminate');
  for (const e of enq) {
    const found = byKey.get(e.key) ?? (e.jobId ? [byId.get(e.jobId)].filter((j): j is FinalJob => !!j) : []);
    if (found.length > 1) {
      unexpected += found.length - 1;
      violations.push(`key ${e.key}: ${found.length} jobs for one idempotency key`);
    }
    for (const j of found) explained.add(j.id);
    const job = found[0];
    if (e.status === 'ok' && keysWithUnknown.has(e.key)) {
      ambiguousAcks += 1;
      if (e.created === false) ambiguousCommitted += 1;
    }
    if (e.status === 'ok' && e.jobId && job && job.id !== e.jobId) {
      unexpected += 1;
      violations.push(`key ${e.key}: acknowledged as job ${e.jobId} but the table holds job ${job.id} for it`);
    }
    if (e.status === 'ok') {
      if (!job) {
        lost += 1;
        violations.push(`lost: acknowledged enqueue ${e.key} has no job`);
      } else if (!TERMINAL.has(job.state)) {
        lost += 1;
        violations.push(`lost: job ${job.id} (${e.key}) is still ${job.state} after the drain`);
      }
    } else if (e.status === 'indeterminate' && job?.state === 'succeeded') {
      recovered += 1;
    } else if (e.status === 'indeterminate' && job && !TERMINAL.has(job.state)) {
      lost += 1;
      violations.push(`lost: job ${job.id} (${e.key}, indeterminate enqueue) is still ${job.state}`);
    }
  }
  for (const j of final) {
    if (!explained.has(j.id)) {
      unexpected += 1;
      violations.push(`unexpected: job ${j.id} matches no enqueue`);
    }
  }
  for (const id of new Set(execs.map((x) => x.jobId))) {
    if (!byId.has(id)) {
      unexpected += 1;
      violations.push(`unexpected: executions of job ${id}, which is not in the table`);
    }
  }

  // No stale write accepted: every accepted outcome write carries the job's current token. Several rules may see the
  // same stale write; it counts once per (job, token).
  const staleKeys = new Set<string>();
  const stale = (jobId: string, token: string | null | undefined, msg: string) => {
    staleKeys.add(`${jobId}:${token}`);
    violations.push(`stale: ${msg}`);
  };
  const accepted = writes.filter((w) => (w.rowsAffected ?? 0) > 0);
  const unknown = writes.filter((w) => w.rowsAffected === null).length;
  for (const [jobId, ws] of groupBy(
    accepted.filter((w) => OUTCOME_KINDS.has(w.kind)),
    (w) => w.jobId,
  )) {
    const job = byId.get(jobId);
    const sorted = [...ws].sort((a, b) => a.at - b.at);
    const completes = sorted.filter((w) => w.kind === 'complete');
    const perToken = groupBy(sorted, (w) => w.token);
    for (const [token, same] of perToken) {
      if (same.length > 1)
        stale(jobId, `${token}#${same.length}`, `job ${jobId} token ${token} had ${same.length} accepted outcome writes`);
    }
    for (const w of completes.slice(0, -1)) {
      stale(jobId, w.token, `job ${jobId} completed ${completes.length} times (tokens ${completes.map((x) => x.token).join(', ')})`);
    }
    const last = completes.at(-1);
    if (last && job && job.state === 'succeeded' && job.leaseToken !== last.token) {
      stale(jobId, last.token, `job ${jobId} succeeded under token ${job.leaseToken} but an accepted complete carried ${last.token}`);
    }
    // Accepted writes follow token order. Only real-time order counts: a write under t SENT after
    // an accepted write under t' > t had been ANSWERED was stale (answers may arrive late).
    for (const w of sorted) {
      const newer = sorted.find((x) => BigInt(x.token) > BigInt(w.token) && x.at < w.sentAt);
      if (newer)
        stale(
          jobId,
          w.token,
          `job ${jobId} accepted a ${w.kind} under token ${w.token}, sent after token ${newer.token}'s write was accepted`,
        );
    }
  }
  // Any write accepted although it was SENT after a newer lease had started proves a stale lease
  // (sentAt precedes the commit, and a newer claim commits before its start record).
  const startsByJob = groupBy(
    execs.filter((x) => x.type === 'start'),
    (x) => x.jobId,
  );
  for (const w of accepted) {
    const newer = (startsByJob.get(w.jobId) ?? []).find((s) => BigInt(s.token) > BigInt(w.token) && s.at < w.sentAt);
    if (newer) stale(w.jobId, w.token, `job ${w.jobId} ${w.kind} under token ${w.token} accepted, sent after token ${newer.token} started`);
  }
  // The table itself: a result must come from the current lease, and each lease leaves at most
  // one entry in the error history (a worker's failure or the reaper's expiry, never both).
  for (const j of final) {
    if (j.state === 'succeeded' && j.resultToken !== undefined && j.resultToken !== j.leaseToken) {
      stale(j.id, j.resultToken, `job ${j.id} holds a result from token ${j.resultToken} but its lease token is ${j.leaseToken}`);
    }
    const toks = j.errorTokens ?? [];
    for (let i = 1; i < toks.length; i++) {
      if (BigInt(toks[i]!) <= BigInt(toks[i - 1]!)) {
        stale(
          j.id,
          toks[i],
          `job ${j.id} error history has token ${toks[i]} after ${toks[i - 1]} (two outcomes for one lease, or out of order)`,
        );
      }
    }
  }

  const staleAccepted = staleKeys.size;

  const cancels = checkCancels(final, history, accepted, startsByJob, violations);

  // Duplicates within the bound: executions (distinct tokens started) against faults that hit the job.
  const faultsHitting = new Map<string, number>();
  let duplicateBound = 0;
  for (const f of faults) {
    if (PRODUCER_ONLY_FAULTS.has(f.kind)) continue;
    const hit = new Set(f.inFlight);
    if (f.until !== undefined) {
      for (const s of execs) {
        if (s.type === 'start' && s.at >= f.at && s.at <= f.until && (f.worker === undefined || s.worker === f.worker)) hit.add(s.jobId);
      }
    }
    duplicateBound += hit.size;
    for (const id of hit) faultsHitting.set(id, (faultsHitting.get(id) ?? 0) + 1);
  }
  let duplicated = 0;
  let duplicateExecutions = 0;
  const perJobBreaches: DuplicateBoundBreach[] = [];
  // A retry after an accepted failure is the plan, not a duplicate.
  const acceptedFails = new Map<string, number>();
  for (const w of accepted) if (w.kind === 'fail') acceptedFails.set(w.jobId, (acceptedFails.get(w.jobId) ?? 0) + 1);
  for (const [jobId, starts] of startsByJob) {
    const n = new Set(starts.map((s) => s.token)).size;
    const extra = n - 1 - (acceptedFails.get(jobId) ?? 0);
    if (extra > 0) {
      duplicated += 1;
      duplicateExecutions += extra;
      const hits = faultsHitting.get(jobId) ?? 0;
      if (extra > hits) perJobBreaches.push({ jobId, executions: n, faultsHitting: hits });
    }
  }
  for (const b of perJobBreaches) {
    violations.push(`duplicate bound: job ${b.jobId} ran ${b.executions} times but only ${b.faultsHitting} fault(s) hit it`);
  }
  if (duplicateExecutions > duplicateBound) {
    violations.push(`duplicate bound: ${duplicateExecutions} extra executions > bound ${duplicateBound}`);
  }

  const succeeded = final.filter((j) => j.state === 'succeeded').length;
  const deadLettered = final.filter((j) => j.state === 'dead_lettered').length;
  if (deadLettered > 0 && !options.allowDeadLetters) violations.push(`dead-lettered: ${deadLettered} job(s)`);
  if (lost > 0) violations.unshift(`LOST ${lost}`);
  if (staleAccepted > 0) violations.unshift(`STALE ACCEPTED ${staleAccepted}`);

  const unexplained = unexplainedTrouble(history, faults);
  if (options.requireQuiet && unexplained.errors + unexplained.indeterminate > 0) {
    violations.push(
      `not quiet: ${unexplained.errors} engine error(s) and ${unexplained.indeterminate} unknown enqueue outcome(s) with no fault active, e.g. ${unexplained.examples.slice(0, 3).join('; ')}`,
    );
  }

  const faultCounts: Record<string, number> = {};
  for (const f of faults) faultCounts[f.kind] = (faultCounts[f.kind] ?? 0) + 1;
  const expected = acked.length + indeterminate.length;
  return {
    jobs: final.length,
    acked: acked.length,
    indeterminate: indeterminate.length,
    lost,
    recovered,
    unexpected,
    ambiguousAcks,
    ambiguousCommitted,
    succeeded,
    deadLettered,
    duplicated,
    duplicateExecutions,
    duplicateBound,
    perJobBreaches,
    executions: [...startsByJob.values()].reduce((n, s) => n + new Set(s.map((x) => x.token)).size, 0),
    writes: {
      attempted: writes.length,
      accepted: accepted.length,
      fenced: writes.length - accepted.length - unknown,
      unknown,
      fencedOutcomes: writes.filter((w) => w.rowsAffected === 0 && OUTCOME_KINDS.has(w.kind)).length,
    },
    staleAccepted,
    unexplained,
    faults: faultCounts,
    cancels,
    fractions: {
      lost: frac(lost, acked.length),
      duplicated: frac(duplicated, final.length),
      okFrac: frac(succeeded, expected),
      recovered: frac(recovered, indeterminate.length),
    },
    violations,
    ok: violations.length === 0,
  };
}

/**
 * Exactly one terminal state per job, and the one its handler's run explains; cancels honoured:
 * - a job whose completion under its last lease was accepted succeeded (the handler finished), whatever was asked;
 * - a cancelled job was asked to stop (a cancel answered, or one with an unknown answer);
 * - after a cancel was recorded no new lease of the job ever started (no retry, no re-claim): a
 *   request on a running job (lease T) allows no start under a token above T, a cancel of a
 *   pending job no start under a token above those started before the cancel was sent;
 * - a job with a request ended cancelled or succeeded (never dead-lettered); one cancelled
 *   while pending stayed cancelled.
 */
function checkCancels(
  final: FinalJob[],
  history: HistoryRecord[],
  accepted: WriteRecord[],
  startsByJob: Map<string, ExecRecord[]>,
  violations: string[],
): CheckResult['cancels'] {
  const records = history.filter((r): r is CancelRecord => r.type === 'cancel');
  const byJob = groupBy(records, (r) => r.jobId);
  const completed = new Set(accepted.filter((w) => w.kind === 'complete').map((w) => `${w.jobId}:${w.token}`));
  const out = {
    requested: records.filter((r) => r.status === 'requested').length,
    cancelled: records.filter((r) => r.status === 'cancelled').length,
    refused: records.filter((r) => r.status === 'refused').length,
    unknown: records.filter((r) => r.status === 'indeterminate').length,
    endedCancelled: 0,
    endedSucceeded: 0,
    handlersStopped: history.filter((r) => r.type === 'end' && r.outcome === 'cancelled').length,
  };
  for (const j of final) {
    const cs = byJob.get(j.id) ?? [];
    if (j.state !== 'succeeded' && j.leaseToken !== null && completed.has(`${j.id}:${j.leaseToken}`)) {
      violations.push(`cancel: job ${j.id} is ${j.state}, but its handler's completion under token ${j.leaseToken} was accepted`);
    }
    if (j.state === 'cancelled' && !cs.some((c) => c.status !== 'refused')) {
      violations.push(`cancel: job ${j.id} is cancelled, but no cancel of it was accepted`);
    }
    const first = cs.filter((c) => c.status === 'requested' || c.status === 'cancelled').sort((a, b) => a.at - b.at)[0];
    if (!first) continue;
    if (first.status === 'requested') {
      if (j.state === 'cancelled') out.endedCancelled += 1;
      else if (j.state === 'succeeded') out.endedSucceeded += 1;
      else violations.push(`cancel: job ${j.id} had a cancel request but ended ${j.state}`);
    } else if (j.state !== 'cancelled') {
      violations.push(`cancel: job ${j.id} was cancelled while pending but ended ${j.state}`);
    }
    // A cancel of a pending job may come after leases that were lost (the job went back to
    // pending): starts sent before it are not "again"; their tokens are below any later claim's.
    let floor = first.token === null ? -1n : BigInt(first.token);
    if (first.token === null)
      for (const s of startsByJob.get(j.id) ?? []) if (s.at < first.sentAt && BigInt(s.token) > floor) floor = BigInt(s.token);
    const again = (startsByJob.get(j.id) ?? []).find((s) => BigInt(s.token) > floor);
    if (again) {
      violations.push(
        `cancel: job ${j.id} started again under token ${again.token} after its cancel was recorded (${first.token === null ? 'never leased' : `under token ${first.token}`})`,
      );
    }
  }
  return out;
}

/** Errors and unknown enqueue outcomes outside every fault's window (widened by QUIET_GRACE_MS). */
function unexplainedTrouble(history: HistoryRecord[], faults: FaultRecord[]): CheckResult['unexplained'] {
  const windows = faults.map((f) => [f.at - QUIET_GRACE_MS, (f.until ?? f.at) + QUIET_GRACE_MS] as const);
  const explained = (at: number) => windows.some(([from, to]) => at >= from && at <= to);
  const errors = history.filter((r): r is ErrorRecord => r.type === 'error' && !explained(r.at));
  const unknown = history.filter((r): r is EnqueueRecord => r.type === 'enqueue' && r.status === 'indeterminate' && !explained(r.at));
  const examples = [
    ...errors.map((e) => `${e.worker} ${e.where}: ${e.code ?? ''} ${e.message}`.replace(/\s+/g, ' ')),
    ...unknown.map((e) => `enqueue ${e.key}: outcome unknown`),
  ];
  return { errors: errors.length, indeterminate: unknown.length, examples: examples.slice(0, 10) };
}

/** One-screen summary, Jepsen style. */
export function formatResult(r: CheckResult): string {
  const pct = (x: number) => `${(x * 100).toFixed(2)}%`;
  return [
    `jobs ${r.jobs}  acked ${r.acked}  indeterminate ${r.indeterminate}`,
    `lost ${r.lost} (${pct(r.fractions.lost)})  recovered ${r.recovered}  unexpected ${r.unexpected}  ambiguous acks ${r.ambiguousAcks} (committed before the lost ack: ${r.ambiguousCommitted})`,
    `succeeded ${r.succeeded} (ok-frac ${pct(r.fractions.okFrac)})  dead-lettered ${r.deadLettered}`,
    `executions ${r.executions}  duplicated jobs ${r.duplicated} (${pct(r.fractions.duplicated)})  extra executions ${r.duplicateExecutions} <= bound ${r.duplicateBound}: ${r.duplicateExecutions <= r.duplicateBound && r.perJobBreaches.length === 0 ? 'yes' : 'NO'}`,
    `outcome writes ${r.writes.attempted}: accepted ${r.writes.accepted}, fenced off ${r.writes.fenced} (outcomes ${r.writes.fencedOutcomes}), unknown ${r.writes.unknown}, stale accepted ${r.staleAccepted}`,
    `faults ${
      Object.entries(r.faults)
        .map(([k, n]) => `${k}=${n}`)
        .join(' ') || 'none'
    }`,
    `cancels: ${r.cancels.requested} requested while running (ended cancelled ${r.cancels.endedCancelled}, succeeded anyway ${r.cancels.endedSucceeded}), ${r.cancels.cancelled} cancelled while pending, ${r.cancels.refused} refused (finished), ${r.cancels.unknown} unknown; handlers stopped on the signal ${r.cancels.handlersStopped}`,
    `with no fault active: engine errors ${r.unexplained.errors}, unknown enqueue outcomes ${r.unexplained.indeterminate}${r.unexplained.examples[0] ? ` (e.g. ${r.unexplained.examples[0]})` : ''}`,
    r.ok ? 'VALID' : `INVALID:\n  ${r.violations.slice(0, 30).join('\n  ')}`,
  ].join('\n');
}

/** Reads the final jobs of `queue` from the database (test-side ad-hoc SQL). */
export async function readFinalJobs(connectionString: string, schema: string, queue: string): Promise<FinalJob[]> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString });
  await c.connect();
  try {
    if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`bad schema ${schema}`);
    const r = await c.query<{
      id: string;
      state: string;
      lease_token: string | null;
      idempotency_key: string | null;
      result_token: string | null;
      error_tokens: string[];
    }>(
      `SELECT id::text, state, lease_token::text, idempotency_key, result->>'token' AS result_token,
              ARRAY(SELECT e->>'token' FROM jsonb_array_elements(errors) e) AS error_tokens
       FROM "${schema}".jobs WHERE queue = $1 ORDER BY id`,
      [queue],
    );
    return r.rows.map((x) => ({
      id: x.id,
      state: x.state,
      leaseToken: x.lease_token,
      idempotencyKey: x.idempotency_key,
      resultToken: x.state === 'succeeded' ? x.result_token : null,
      errorTokens: x.error_tokens,
    }));
  } finally {
    await c.end();
  }
}

// CLI: tsx test/chaos/checker.ts (--db URL | --final DIR/final.json) DIR/*.jsonl  (re-checks a kept history)
if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const opt = (name: string, dflt?: string) => {
    const i = args.indexOf(`--${name}`);
    if (i < 0) return dflt;
    const [v] = args.splice(i, 2).slice(1);
    return v;
  };
  const db = opt('db');
  const finalFile = opt('final');
  const schema = opt('schema', 'baton')!;
  const queue = opt('queue', 'chaos')!;
  if ((!db && !finalFile) || args.length === 0) {
    console.error('usage: checker.ts (--db URL [--schema baton] [--queue chaos] | --final final.json) history.jsonl...');
    process.exit(2);
  }
  const { readFileSync } = await import('node:fs');
  const final: FinalJob[] = finalFile ? JSON.parse(readFileSync(finalFile, 'utf8')) : await readFinalJobs(db!, schema, queue);
  const result = checkHistory(final, readHistory(...args));
  console.log(formatResult(result));
  process.exit(result.ok ? 0 : 1);
}
