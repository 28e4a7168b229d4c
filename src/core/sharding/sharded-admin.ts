// The admin API of a sharded Baton: every read and action of AdminApi over one admin per
// cluster. Actions on a job go to the cluster its id names (`a:123`); actions on a queue to the
// cluster it is routed to; reads are merged (listings in order, counts summed); fleet-wide
// flow settings (key patterns, tenant weights) are written to every cluster. Nothing here is
// atomic across clusters: each cluster's part is its own statement, as on one database.

import { BatonError, isBatonError } from '../../types/errors.ts';
import type { Job, JobState } from '../../types/job.ts';
import { type AdminApi, DLQ_REPLAY_LIMIT_DEFAULT, emptyCounts, type StateCounts } from '../admin.ts';
import type { FlowSnapshot } from '../flow-control-admin.ts';
import { BULK_IDS_MAX, type BulkItemResult, type StatsSnapshot } from '../queue-admin.ts';
import { listJobsAcross } from './merged-listing.ts';
import { clusterOf, mustParseRef, mustRoute, parseRef, refJob, type ShardRouting } from './routing.ts';

type Admins = Readonly<Record<string, AdminApi>>;

function addCounts(into: StateCounts, from: Record<JobState, number>): StateCounts {
  for (const [s, n] of Object.entries(from)) into[s as JobState] += n;
  return into;
}

/** Rows of several clusters keyed by `key`, the same key's rows folded by `fold`, in key order. */
function mergeBy<T>(rows: T[], key: (row: T) => string, fold: (a: T, b: T) => T): T[] {
  const by = new Map<string, T>();
  for (const row of rows) {
    const k = key(row);
    const seen = by.get(k);
    by.set(k, seen === undefined ? row : fold(seen, row));
  }
  return [...by.values()].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

const laterDate = (a: Date | null, b: Date | null) => (a === null ? b : b === null ? a : a > b ? a : b);
type QueueRow = { queue: string; paused: boolean; pausedAt: Date | null; counts: Record<JobState, number> };

/** One queue seen on two clusters (stray jobs, or a route changed): counts summed, paused if either is. */
function foldQueue(a: QueueRow, b: QueueRow): QueueRow & { counts: StateCounts } {
  return {
    queue: a.queue,
    paused: a.paused || b.paused,
    pausedAt: laterDate(a.pausedAt, b.pausedAt),
    counts: addCounts(addCounts(emptyCounts(), a.counts), b.counts),
  };
}

const maxOrNull = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));

/** Sums stats snapshots; start latency percentiles are the largest cluster's (an upper bound, not a merged percentile). */
function sumStats(snaps: StatsSnapshot[]): StatsSnapshot {
  const queues = mergeBy(
    snaps.flatMap((s) => s.queues),
    (q) => q.queue,
    (a, b) => ({ ...foldQueue(a, b), scheduled: a.scheduled + b.scheduled }),
  );
  const [first, ...rest] = snaps as [StatsSnapshot, ...StatsSnapshot[]];
  const window = rest.reduce(
    (w, s) => ({
      seconds: w.seconds,
      succeeded: w.succeeded + s.window.succeeded,
      deadLettered: w.deadLettered + s.window.deadLettered,
      cancelled: w.cancelled + s.window.cancelled,
      startLatencyMs: {
        count: w.startLatencyMs.count + s.window.startLatencyMs.count,
        p50: maxOrNull(w.startLatencyMs.p50, s.window.startLatencyMs.p50),
        p95: maxOrNull(w.startLatencyMs.p95, s.window.startLatencyMs.p95),
        max: maxOrNull(w.startLatencyMs.max, s.window.startLatencyMs.max),
      },
    }),
    first.window,
  );
  const at = snaps.reduce((m, s) => (s.at.getTime() > m.getTime() ? s.at : m), first.at);
  return { at, queues, window };
}

function mergeFlow(snaps: FlowSnapshot[]): FlowSnapshot {
  const keep = <T>(a: T) => a;
  return {
    queues: snaps.flatMap((s) => s.queues),
    keyPatterns: mergeBy(
      snaps.flatMap((s) => s.keyPatterns),
      (p) => p.pattern,
      keep,
    ),
    weights: mergeBy(
      snaps.flatMap((s) => s.weights),
      (w) => w.tenantId,
      keep,
    ),
    tenants: snaps.flatMap((s) => s.tenants),
    keys: snaps.flatMap((s) => s.keys),
    held: snaps.flatMap((s) => s.held),
  };
}

/** The AdminApi of a sharded Baton over `admins` (one per cluster of `r`). */
export function shardedAdmin(r: ShardRouting, admins: Admins): AdminApi {
  const of = (cluster: string) => admins[cluster] as AdminApi;
  const all = <T>(f: (a: AdminApi) => Promise<T>) => Promise.all(r.clusters.map((c) => f(of(c))));
  const onJob = async (ref: string, act: (a: AdminApi, id: string) => Promise<Job>) => {
    const { cluster, id } = mustParseRef(r, ref);
    return refJob(cluster, await act(of(cluster), id));
  };
  /** Clusters a queue-filtered read touches: the queue's own, or all for an unrouted queue. */
  const clustersFor = (queue: string | undefined) => {
    const c = queue === undefined ? null : clusterOf(r, queue);
    return c === null ? r.clusters : [c];
  };

  return {
    getJob: (ref, opts) => onJob(ref, (a, id) => a.getJob(id, opts)),
    listJobs: (filter) => listJobsAcross(r, admins, filter),
    replay: (ref) => onJob(ref, (a, id) => a.replay(id)),
    cancel: (ref) => onJob(ref, (a, id) => a.cancel(id)),
    runNow: (ref) => onJob(ref, (a, id) => a.runNow(id)),
    async replayDeadLetters(opts = {}) {
      let left = opts.limit ?? DLQ_REPLAY_LIMIT_DEFAULT;
      const out = [];
      for (const c of clustersFor(opts.queue)) {
        if (left <= 0) break;
        const done = await of(c).replayDeadLetters({ ...opts, limit: left });
        out.push(...done.map((j) => refJob(c, j)));
        left -= done.length;
      }
      return out;
    },
    async queueDepth(queue) {
      const counts = await Promise.all(clustersFor(queue).map((c) => of(c).queueDepth(queue)));
      return counts.reduce(addCounts, emptyCounts());
    },
    async queues() {
      return mergeBy((await all((a) => a.queues())).flat(), (q) => q.queue, foldQueue);
    },
    pauseQueue: (queue) => of(mustRoute(r, queue)).pauseQueue(queue),
    resumeQueue: (queue) => of(mustRoute(r, queue)).resumeQueue(queue),
    pausedQueues: async () => (await all((a) => a.pausedQueues())).flat(),
    async bulk(action, refs) {
      if (refs.length < 1 || refs.length > BULK_IDS_MAX || new Set(refs).size !== refs.length) {
        throw new BatonError('INVALID_ARGUMENT', `bulk takes 1 to ${BULK_IDS_MAX} distinct ids`, { details: { field: 'ids' } });
      }
      const byCluster = new Map<string, string[]>();
      for (const ref of refs) {
        const p = parseRef(r, ref);
        if (p) byCluster.set(p.cluster, [...(byCluster.get(p.cluster) ?? []), p.id]);
      }
      const results = new Map<string, BulkItemResult>();
      await Promise.all(
        [...byCluster].map(async ([c, ids]) => {
          for (const item of await of(c).bulk(action, ids)) {
            const id = `${c}:${item.id}`;
            results.set(id, item.ok ? { id, ok: true, job: refJob(c, item.job) } : { ...item, id });
          }
        }),
      );
      return refs.map(
        (id) =>
          results.get(id) ?? {
            id,
            ok: false,
            code: 'JOB_NOT_FOUND',
            message: `job ${id} not found (a sharded Baton names jobs <cluster>:<id>)`,
          },
      );
    },
    stats: async (opts) => sumStats(await all((a) => a.stats(opts))),
    workers: async () => (await all((a) => a.workers())).flat(),
    async health() {
      const hs = await Promise.all(r.clusters.map(async (c) => [c, await of(c).health()] as const));
      const [, first] = hs[0] as (typeof hs)[number];
      return {
        readAt: first.readAt,
        queues: hs.flatMap(([, h]) => h.queues),
        tables: hs.flatMap(([c, h]) => h.tables.map((t) => ({ ...t, name: `${c}:${t.name}` }))),
        horizon: {
          sessionXminAge: hs.reduce<number | null>((m, [, h]) => maxOrNull(m, h.horizon.sessionXminAge), null),
          oldestTransactionSeconds: hs.reduce<number | null>((m, [, h]) => maxOrNull(m, h.horizon.oldestTransactionSeconds), null),
          preparedXminAge: hs.reduce<number | null>((m, [, h]) => maxOrNull(m, h.horizon.preparedXminAge), null),
          slotXminAge: hs.reduce<number | null>((m, [, h]) => maxOrNull(m, h.horizon.slotXminAge), null),
        },
      };
    },
    flow: async () => mergeFlow(await all((a) => a.flow())),
    setQueueLimits: (queue, limits) => of(mustRoute(r, queue)).setQueueLimits(queue, limits),
    // Key caps and tenant weights are per cluster (each counts its own jobs): the same setting is written to each.
    setKeyLimits: async (pattern, limits) => (await all((a) => a.setKeyLimits(pattern, limits)))[0] as never,
    setTenantWeight: async (tenantId, weight) => (await all((a) => a.setTenantWeight(tenantId, weight)))[0] as never,
    async deleteKeyLimits(pattern) {
      const outcomes = await Promise.allSettled(r.clusters.map((c) => of(c).deleteKeyLimits(pattern)));
      const failed = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected').map((o) => o.reason as unknown);
      const notFound = failed.filter((e) => isBatonError(e) && e.code === 'KEY_PATTERN_NOT_FOUND');
      const other = failed.find((e) => !notFound.includes(e));
      if (other !== undefined) throw other;
      if (notFound.length === outcomes.length) throw notFound[0];
    },
  };
}
