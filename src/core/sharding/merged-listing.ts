// admin.listJobs across clusters: each cluster's page read in the listing's own order, merged
// by k-way comparison of the heads, so each cluster's order is kept and a page boundary never
// repeats or skips a job. Ids of different clusters are not comparable: the id and createdAt
// orders merge by created_at (cluster name, then id, breaking ties); other keys by their value.
// A merged cursor holds every cluster's position (`a:120.b:0`, 0 = nothing read yet).

import { BatonError } from '../../types/errors.ts';
import type { JobSummary } from '../../types/job.ts';
import { CLUSTER_NAME_PATTERN } from '../../types/job.ts';
import { pagesByCursor } from '../../types/job-sort.ts';
import { type JobPage, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, LIST_OFFSET_MAX, type ListJobsFilter } from '../admin.ts';
import { refJob, type ShardRouting } from './routing.ts';

/** A merged listing's cursor: `<cluster>:<last id read>` per cluster, joined by dots. */
export const SHARDED_CURSOR_PATTERN = /^[a-z][a-z0-9_]{0,15}:(?:0|[1-9][0-9]{0,18})(?:\.[a-z][a-z0-9_]{0,15}:(?:0|[1-9][0-9]{0,18}))*$/;

type Admins = Readonly<Record<string, { listJobs(f: ListJobsFilter): Promise<JobPage> }>>;
type Head = { cluster: string; job: JobSummary };

function encodeCursor(positions: Map<string, string>): string {
  return [...positions].map(([c, id]) => `${c}:${id}`).join('.');
}

function decodeCursor(r: ShardRouting, cursor: string): Map<string, string> {
  const bad = () => new BatonError('INVALID_ARGUMENT', 'cursor must be a nextCursor of an earlier page of this listing');
  if (!SHARDED_CURSOR_PATTERN.test(cursor)) throw bad();
  const positions = new Map<string, string>(r.clusters.map((c) => [c, '0']));
  for (const part of cursor.split('.')) {
    const [c, id] = part.split(':') as [string, string];
    if (!CLUSTER_NAME_PATTERN.test(c) || !positions.has(c)) throw bad();
    positions.set(c, id);
  }
  return positions;
}

function sortValue(job: JobSummary, key: string): number | string {
  const v = (job as unknown as Record<string, unknown>)[key];
  if (v instanceof Date) return v.getTime();
  return typeof v === 'number' ? v : String(v);
}

/**
 * The cursor of the page after `ids`, the jobs actually shown of a page read from `start` (the
 * HTTP edge cuts a page short at its size cap): the last id when ids are bare (one database);
 * across clusters, `start` advanced to each cluster's last id shown.
 */
export function cursorAfter(start: string | undefined, ids: readonly string[]): string | null {
  const last = ids.at(-1);
  if (last === undefined || !last.includes(':')) return last ?? null;
  const positions = new Map<string, string>();
  for (const part of start !== undefined && SHARDED_CURSOR_PATTERN.test(start) ? start.split('.') : []) {
    const [c, id] = part.split(':') as [string, string];
    positions.set(c, id);
  }
  for (const ref of ids) {
    const [c, id] = ref.split(':') as [string, string];
    positions.set(c, id);
  }
  return encodeCursor(positions);
}

/** Orders two heads as the merged listing shows them (ascending; the caller flips for desc). */
function compareAsc(a: Head, b: Head, key: string): number {
  const k = key === 'id' ? 'createdAt' : key;
  const va = sortValue(a.job, k);
  const vb = sortValue(b.job, k);
  if (va !== vb) return va < vb ? -1 : 1;
  if (a.cluster !== b.cluster) return a.cluster < b.cluster ? -1 : 1;
  const ia = BigInt(a.job.id);
  const ib = BigInt(b.job.id);
  return ia === ib ? 0 : ia < ib ? -1 : 1;
}

/** Merges sorted per-cluster lists, taking `skip` then `take` jobs; reports how many of each cluster it consumed. */
function merge(lists: Map<string, JobSummary[]>, key: string, desc: boolean, skip: number, take: number) {
  const idx = new Map<string, number>([...lists.keys()].map((c) => [c, 0]));
  const out: Head[] = [];
  for (let n = 0; n < skip + take; n++) {
    let best: Head | null = null;
    for (const [cluster, jobs] of lists) {
      const job = jobs[idx.get(cluster) as number];
      if (job === undefined) continue;
      const h = { cluster, job };
      if (best === null || (desc ? compareAsc(h, best, key) > 0 : compareAsc(h, best, key) < 0)) best = h;
    }
    if (best === null) break;
    idx.set(best.cluster, (idx.get(best.cluster) as number) + 1);
    if (n >= skip) out.push(best);
  }
  return out;
}

/** Reads the first `n` jobs of one cluster's listing, a page of at most LIST_LIMIT_MAX at a time. */
async function readTop(admin: Admins[string], filter: ListJobsFilter, n: number): Promise<JobPage & { all: JobSummary[] }> {
  const all: JobSummary[] = [];
  let first: JobPage | null = null;
  while (all.length < n) {
    const want = Math.min(LIST_LIMIT_MAX, n - all.length);
    const page = await admin.listJobs({ ...filter, offset: all.length, limit: want });
    first ??= page;
    all.push(...page.jobs);
    if (page.jobs.length < want) break;
  }
  return { ...(first as JobPage), all };
}

/**
 * A page of the merged listing. Offset pages read offset + limit jobs from each cluster (deep
 * ones cost more than on one database: page by cursor); cursor pages read `limit` from each.
 */
export async function listJobsAcross(r: ShardRouting, admins: Admins, filter: ListJobsFilter = {}): Promise<JobPage> {
  const { cursor, offset = 0, limit = LIST_LIMIT_DEFAULT, ...rest } = filter;
  const key = rest.sort ?? 'id';
  const desc = (rest.order ?? 'desc') === 'desc';
  const byCursor = pagesByCursor(rest);
  const bad = (field: string, why: string) => new BatonError('INVALID_ARGUMENT', `${field} ${why}`, { details: { field } });
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_LIMIT_MAX)
    throw bad('limit', `must be an integer between 1 and ${LIST_LIMIT_MAX}`);
  if (!Number.isInteger(offset) || offset < 0 || offset > LIST_OFFSET_MAX)
    throw bad('offset', `must be an integer between 0 and ${LIST_OFFSET_MAX}`);
  if (cursor !== undefined && offset !== 0)
    throw bad('cursor', 'and offset exclude each other: a cursor page starts right after its cursor');
  if (cursor !== undefined && !byCursor) throw bad('cursor', 'pages exact listings in id order only: page this listing by offset');
  const positions = cursor === undefined ? null : decodeCursor(r, cursor);
  const pages = await Promise.all(
    r.clusters.map(async (c) => {
      const admin = admins[c] as Admins[string];
      if (positions === null) return [c, await readTop(admin, rest, offset + limit)] as const;
      const at = positions.get(c) as string;
      const page = await admin.listJobs({ ...rest, limit, ...(at === '0' ? {} : { cursor: at }) });
      return [c, { ...page, all: page.jobs }] as const;
    }),
  );
  const lists = new Map(pages.map(([c, p]) => [c, p.all]));
  const taken = merge(lists, key, desc, positions === null ? offset : 0, limit);
  let nextCursor: string | null = null;
  if (byCursor && taken.length === limit) {
    const next = new Map(positions ?? r.clusters.map((c) => [c, '0']));
    for (const h of taken) next.set(h.cluster, h.job.id);
    nextCursor = encodeCursor(next);
  }
  return {
    jobs: taken.map((h) => refJob(h.cluster, h.job)),
    total: pages.reduce((sum, [, p]) => sum + p.total, 0),
    limit,
    offset: positions === null ? offset : 0,
    nextCursor,
    windowed: pages.some(([, p]) => p.windowed),
  };
}
