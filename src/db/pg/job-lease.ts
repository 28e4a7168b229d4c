// The FIFO claim and the lease writes: each write is fenced by the lease token in SQL
// (queries/job-lease.ts), and answers which of its leases it wrote; a stale lease is simply absent.

import type { HeartbeatResult, JobClaimParams, JobCompleteItem, JobFailItem, Lease, ReapedJob } from '../../driver/executor.ts';
import type { JobState, LeasedJob } from '../../types/job.ts';
import { type ClaimRow, claimJobs } from './claim.ts';
import type { ExecutorStatements } from './executor-statements.ts';
import type { QueryConfigLike } from './pool.ts';
import { queryRows } from './query-rows.ts';
import type { RecordedBlocks } from './recorded-blocks.ts';

type LeaseDb = Pick<ExecutorStatements, 'pool' | 'job'>;

export async function claim(db: LeaseDb, p: JobClaimParams): Promise<LeasedJob[]> {
  return claimJobs(await queryRows<ClaimRow>(db.pool, db.job.claim(p.limit), [p.queue, p.limit, p.owner, p.intoRunning, p.leaseMs]), p);
}

/** A lease write's answer (see acceptedIds in queries/job-lease.ts): the ids it wrote, all of `ids` when the answer is NULL. */
const written = (row: { ids: string[] | null } | undefined, ids: string[]) => new Set(row?.ids === null ? ids : (row?.ids ?? []));

/** Runs a lease write that answers its written ids only. */
async function leaseWrite(db: LeaseDb, query: QueryConfigLike, ids: string[], values: unknown[]): Promise<Set<string>> {
  const [row] = await queryRows<{ ids: string[] | null }>(db.pool, query, values);
  return written(row, ids);
}

export function markRunningMany(db: LeaseDb, p: { leases: Lease[] }): Promise<Set<string>> {
  const { ids, values } = leaseArrays(p.leases);
  return leaseWrite(db, db.job.markRunningMany, ids, values);
}

export async function heartbeatMany(db: LeaseDb, p: { leases: Lease[]; leaseMs: number }): Promise<HeartbeatResult> {
  const { ids, values } = leaseArrays(p.leases);
  const [row] = await queryRows<{ ids: string[] | null; cancel: string[] | null }>(db.pool, db.job.heartbeatMany, [...values, p.leaseMs]);
  return {
    alive: written(row, ids),
    cancelRequested: new Set((row?.cancel ?? []).map(String)),
  };
}

/** Stores each lease's latest progress (JSON text), fenced: answers the ids written. */
export function progressMany(db: LeaseDb, p: { items: Array<Lease & { progress: string }> }): Promise<Set<string>> {
  const { ids, values } = leaseArrays(p.items);
  return leaseWrite(db, db.job.progressMany, ids, [...values, p.items.map((i) => i.progress)]);
}

/** `recordedBlocks`: the blocks this executor's completions recorded lately, kept across calls. */
export async function completeMany(
  db: LeaseDb,
  recordedBlocks: RecordedBlocks,
  p: { items: JobCompleteItem[]; deleteRows?: boolean },
): Promise<Set<string>> {
  const { ids, values } = leaseArrays(p.items);
  if (p.deleteRows) return leaseWrite(db, db.job.completeDeleteMany, ids, values);
  // A null result is stored as SQL NULL (read back as null all the same), so a batch of
  // handlers that return nothing sends no array: the statement then neither parses one
  // jsonb value per row nor looks each row's position up in $2 (linear in the batch).
  const results = p.items.map((i) => (i.result === undefined || i.result === null ? null : JSON.stringify(i.result)));
  const args = [...values, results.some((r) => r !== null) ? results : null];
  try {
    if (recordedBlocks.allKnown(p.items)) return await leaseWrite(db, db.job.completeManyBlocksKnown(ids.length), ids, args);
    const sentAt = recordedBlocks.now();
    const [row] = await queryRows<{ ids: string[] | null; recorded: Array<[string, string]> | null }>(
      db.pool,
      db.job.completeMany(ids.length),
      args,
    );
    if (row?.recorded) recordedBlocks.inserted(row.recorded, sentAt);
    return written(row, ids);
  } catch (err) {
    recordedBlocks.clear();
    throw err;
  }
}

export async function failMany(
  db: LeaseDb,
  p: { items: JobFailItem[]; backoffBaseMs: number; backoffCapMs: number },
): Promise<Map<string, JobState>> {
  const rows = await queryRows<{ id: string; state: JobState }>(db.pool, db.job.failMany, [
    ...leaseArrays(p.items).values,
    p.items.map((i) => JSON.stringify(i.error)),
    p.backoffBaseMs,
    p.backoffCapMs,
    p.items.map((i) => i.terminal),
  ]);
  return new Map(rows.map((r) => [String(r.id), r.state]));
}

export function releaseMany(db: LeaseDb, p: { leases: Lease[]; refundAttempt: boolean }): Promise<Set<string>> {
  const { ids, values } = leaseArrays(p.leases);
  return leaseWrite(db, db.job.releaseMany, ids, [...values, p.refundAttempt]);
}

export async function reap(db: LeaseDb, p: { limit: number; graceMs: number; fastReclaim: boolean }): Promise<ReapedJob[]> {
  const rows = await queryRows<{ id: string; state: JobState; queue: string; expired: boolean }>(db.pool, db.job.reap, [
    p.limit,
    p.graceMs,
    p.fastReclaim,
  ]);
  return rows.map((r) => ({ id: String(r.id), state: r.state, queue: r.queue, expired: r.expired }));
}

export function leasesOwned(db: LeaseDb, p: { owner: string }): Promise<Array<Lease & { queue: string }>> {
  return queryRows<Lease & { queue: string }>(db.pool, db.job.leasesOwned, [p.owner]);
}

export async function tokenHighWater(db: LeaseDb): Promise<bigint> {
  const [row] = await queryRows<{ v: string }>(db.pool, db.job.tokenHighWater, []);
  return BigInt(row!.v);
}

const BIGINT_LIST = /^\{\d+(?:,\d+)*\}$/;

/**
 * A batch's ids and tokens, and the two as bigint[] parameters ($1, $2). Ids and tokens are
 * decimal strings read from the database, so the literal is built by one join, far cheaper
 * than node-postgres's per-element array escaping; anything else goes as an array, escaped.
 */
function leaseArrays(leases: readonly Lease[]): { ids: string[]; values: [string | string[], string | string[]] } {
  const ids = leases.map((l) => l.id);
  const tokens = leases.map((l) => l.token);
  const idList = `{${ids.join(',')}}`;
  const tokenList = `{${tokens.join(',')}}`;
  const plain = BIGINT_LIST.test(idList) && BIGINT_LIST.test(tokenList);
  return { ids, values: plain ? [idList, tokenList] : [ids, tokens] };
}
