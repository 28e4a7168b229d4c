// The routing map of a sharded deployment: which cluster holds each queue, and how a job id
// names its cluster (`a:123`). Pure and validated once: every name in it is checked at
// creation, so a route never points at a cluster that does not exist.

import { BatonError } from '../../types/errors.ts';
import { CLUSTER_JOB_ID_PATTERN, CLUSTER_NAME_PATTERN, isJobId } from '../../types/job.ts';
import { NAME_PATTERN } from '../config.ts';

/** The queue a job spec without `queue` goes to (the engine's default). */
export const DEFAULT_QUEUE = 'default';

/** Where queues live: cluster names in order, queue -> cluster, and the cluster of unrouted queues (or none). */
export interface ShardRouting {
  /** Cluster names, in the order given (the first is home when there is no default). */
  readonly clusters: readonly string[];
  /** Queue -> cluster name. */
  readonly routes: Readonly<Record<string, string>>;
  /** The cluster of queues `routes` does not name; null: an enqueue to one is INVALID_ARGUMENT. */
  readonly defaultCluster: string | null;
}

/** The routing as createShardedBaton takes it; `setting` names the options in messages (the daemon names its env vars). */
export interface ShardRoutingInput {
  clusters: readonly string[];
  routes: Record<string, string>;
  defaultCluster?: string | undefined;
}

/** Setting names used in INVALID_CONFIG messages. @internal */
export interface RoutingSettingNames {
  clusters: string;
  routes: string;
  defaultCluster: string;
}

const LIBRARY_NAMES: RoutingSettingNames = { clusters: 'clusters', routes: 'routes', defaultCluster: 'default' };

/** Validates a routing map; INVALID_CONFIG naming the bad setting (`names`: the options' or env vars' names). */
export function parseShardRouting(input: ShardRoutingInput, names: RoutingSettingNames = LIBRARY_NAMES): ShardRouting {
  const bad = (why: string) => new BatonError('INVALID_CONFIG', `invalid sharding options: ${why}`);
  if (input.clusters.length === 0) throw bad(`${names.clusters} must name at least one cluster`);
  for (const c of input.clusters) {
    if (!CLUSTER_NAME_PATTERN.test(c)) {
      throw bad(`${names.clusters}: cluster name ${JSON.stringify(c)} must be 1-16 chars of [a-z0-9_], a letter first`);
    }
  }
  const known = new Set(input.clusters);
  const routes: Record<string, string> = {};
  for (const [queue, cluster] of Object.entries(input.routes)) {
    if (!NAME_PATTERN.test(queue)) throw bad(`${names.routes}: ${JSON.stringify(queue)} is not a queue name`);
    if (!known.has(cluster)) {
      throw bad(`${names.routes}: queue ${queue} goes to cluster ${JSON.stringify(cluster)}, which ${names.clusters} does not name`);
    }
    routes[queue] = cluster;
  }
  const d = input.defaultCluster;
  if (d !== undefined && !known.has(d)) throw bad(`${names.defaultCluster} ${JSON.stringify(d)} is not a cluster ${names.clusters} names`);
  return Object.freeze({ clusters: Object.freeze([...input.clusters]), routes: Object.freeze(routes), defaultCluster: d ?? null });
}

/** The cluster holding `queue`, or null when it is not routed and there is no default cluster. */
export function clusterOf(r: ShardRouting, queue: string): string | null {
  return r.routes[queue] ?? r.defaultCluster;
}

/** The cluster holding `queue`; INVALID_ARGUMENT naming the queue when it goes nowhere. */
export function mustRoute(r: ShardRouting, queue: string): string {
  const c = clusterOf(r, queue);
  if (c === null) {
    throw new BatonError('INVALID_ARGUMENT', `queue ${JSON.stringify(queue)} is routed to no cluster and no default cluster is set`, {
      details: { queue },
    });
  }
  return c;
}

/** A cluster's job id as a sharded Baton answers it: `a:123`. */
export function toRef(cluster: string, id: string): string {
  return `${cluster}:${id}`;
}

/** The cluster and local id a `cluster:id` names, or null for anything else (a bare id, an unknown cluster). */
export function parseRef(r: ShardRouting, ref: string): { cluster: string; id: string } | null {
  const m = CLUSTER_JOB_ID_PATTERN.exec(ref);
  if (!m) return null;
  const [, cluster, id] = m as unknown as [string, string, string];
  return r.clusters.includes(cluster) && isJobId(id) ? { cluster, id } : null;
}

/** The cluster and local id of `ref`; JOB_NOT_FOUND when it names no job of these clusters (a bare id among them). */
export function mustParseRef(r: ShardRouting, ref: string): { cluster: string; id: string } {
  const p = parseRef(r, ref);
  if (!p)
    throw new BatonError('JOB_NOT_FOUND', `job ${ref} not found (a sharded Baton names jobs <cluster>:<id>)`, { details: { id: ref } });
  return p;
}

/** A cluster's job as a sharded Baton answers it: its id and its parents' ids prefixed with the cluster. */
export function refJob<T extends { id: string; dependsOn?: string[] | undefined }>(cluster: string, job: T): T {
  return {
    ...job,
    id: toRef(cluster, job.id),
    ...(job.dependsOn === undefined ? {} : { dependsOn: job.dependsOn.map((id) => toRef(cluster, id)) }),
  };
}
