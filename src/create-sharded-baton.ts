// Composition of a sharded Baton: one createBaton per cluster, each given the queues this
// process works there, composed by core/sharding (docs/scaling.md, Sharding queues across clusters).

import type { Baton } from './core/baton.ts';
import { DEFAULT_QUEUE, mustRoute, parseShardRouting, type RoutingSettingNames } from './core/sharding/routing.ts';
import { composeShardedBaton, type ShardedBaton } from './core/sharding/sharded-baton.ts';
import { type BatonOptions, createBaton } from './create-baton.ts';
import { BatonError, isBatonError } from './types/errors.ts';

/**
 * Options of createShardedBaton: every createBaton option (applied to each cluster's engine;
 * poolSize is per cluster) but the connection, which `clusters` gives per cluster.
 */
export interface ShardedBatonOptions extends Omit<BatonOptions, 'pool' | 'connectionString' | 'directConnectionString' | 'pooler'> {
  /** Cluster name ([a-z][a-z0-9_]*) -> connection string. Each is an independent database with its own schema, migrated by migrate(). */
  clusters: Record<string, string>;
  /** Queue -> cluster name: where its jobs are stored, claimed and administered. */
  routes: Record<string, string>;
  /**
   * The cluster of queues `routes` does not name. Without one, an enqueue to an unrouted queue is
   * INVALID_ARGUMENT. Also the home cluster (cron, workflows, outbox); the first cluster otherwise.
   */
  default?: string;
}

/**
 * Creates a Baton over several independent databases. Nothing connects until migrate(), start()
 * or a first query; start() starts only the engines of clusters holding a queue in `queues`
 * (every cluster's when `queues` is empty). Job ids are `<cluster>:<id>`.
 * @throws BatonError INVALID_CONFIG naming the bad option (a cluster, a route, a queue no cluster holds).
 */
export function createShardedBaton(options: ShardedBatonOptions): ShardedBaton {
  return buildShardedBaton(options, { clusters: 'clusters', routes: 'routes', defaultCluster: 'default' });
}

/** createShardedBaton, its INVALID_CONFIG messages naming settings `names` (the daemon's environment variables). @internal */
export function buildShardedBaton(options: ShardedBatonOptions, names: RoutingSettingNames): ShardedBaton {
  const { clusters, routes, default: defaultCluster, queues = {}, schedules, outbox, ...rest } = options;
  const r = parseShardRouting({ clusters: Object.keys(clusters ?? {}), routes: routes ?? {}, defaultCluster }, names);
  const home = r.defaultCluster ?? (r.clusters[0] as string);
  const work: Record<string, Record<string, number>> = Object.fromEntries(r.clusters.map((c) => [c, {}]));
  for (const [queue, concurrency] of Object.entries(queues)) {
    try {
      (work[mustRoute(r, queue)] as Record<string, number>)[queue] = concurrency;
    } catch {
      throw new BatonError(
        'INVALID_CONFIG',
        `invalid sharding options: queue ${queue} is worked here but ${names.routes} routes it to no cluster and no ${names.defaultCluster} is set`,
      );
    }
  }
  // Schedules are the home cluster's (its cron service enqueues on its own database only).
  for (const s of schedules ?? []) {
    const queue = s.queue ?? DEFAULT_QUEUE;
    if ('workflow' in s && s.workflow !== undefined) continue;
    if (r.routes[queue] !== undefined && r.routes[queue] !== home) {
      throw new BatonError(
        'INVALID_CONFIG',
        `invalid sharding options: schedule ${s.name} enqueues on queue ${queue} of cluster ${r.routes[queue]}; schedules run on the home cluster ${home}`,
      );
    }
  }
  const workClusters = Object.keys(queues).length === 0 ? r.clusters : r.clusters.filter((c) => Object.keys(work[c] ?? {}).length > 0);
  const engines: Record<string, Baton> = {};
  for (const c of r.clusters) {
    try {
      engines[c] = createBaton({
        ...rest,
        connectionString: clusters[c] as string,
        queues: work[c] as Record<string, number>,
        ...(c === home ? { schedules: schedules ?? [], ...(outbox ? { outbox } : {}) } : { pruneSchedules: false }),
      });
    } catch (err) {
      if (isBatonError(err) && err.code === 'INVALID_CONFIG') throw new BatonError('INVALID_CONFIG', `cluster ${c}: ${err.message}`);
      throw err;
    }
  }
  return composeShardedBaton(r, engines, { home, workClusters });
}
