// BATON_CLUSTERS, BATON_QUEUE_ROUTES and BATON_DEFAULT_CLUSTER read into the routing of a sharded
// daemon, checked at start-up: a bad name, a URL that is not one, a route to a cluster not
// listed or a worked queue no cluster holds is a ConfigError naming the setting.

import { parseShardRouting } from '../core/sharding/routing.ts';
import { isBatonError } from '../types/errors.ts';
import { ConfigError } from './env.ts';
import { describeSetting, pgUrl, type SettingName } from './settings.ts';

/** The daemon's clusters (name -> URL), routes (queue -> cluster) and default cluster. */
export interface ShardingConfig {
  clusters: Readonly<Record<string, string>>;
  routes: Readonly<Record<string, string>>;
  defaultCluster: string | undefined;
}

const NAMES = { clusters: 'BATON_CLUSTERS', routes: 'BATON_QUEUE_ROUTES', defaultCluster: 'BATON_DEFAULT_CLUSTER' } as const;

const fail = (setting: SettingName, why: string) => new ConfigError(`invalid configuration: ${describeSetting(setting)}: ${why}`, setting);

/** `k=v,k=v` pairs; a multi-host URL's own commas stay in its value (a pair starts only at `<name>=`). */
function pairs(raw: string, setting: SettingName, what: string): Array<[string, string]> {
  return raw
    .split(/,(?=\s*[A-Za-z0-9_.:/-]+=)/)
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      const at = p.indexOf('=');
      // A cluster entry is never repeated in full: its URL may hold a password.
      if (at < 1 || at === p.length - 1) throw fail(setting, `${setting === 'BATON_CLUSTERS' ? 'an entry' : `"${p}"`} is not ${what}`);
      return [p.slice(0, at).trim(), p.slice(at + 1).trim()];
    });
}

/**
 * The sharding settings, or undefined when BATON_CLUSTERS is unset. `queues`: the queues this
 * process works (BATON_QUEUES), each of which must be routed.
 */
export function parseShardingSettings(
  raw: {
    clusters?: string | undefined;
    routes?: string | undefined;
    defaultCluster?: string | undefined;
    databaseUrl?: string | undefined;
    pooler: string;
  },
  queues: Record<string, number> | undefined,
): ShardingConfig | undefined {
  if (raw.clusters === undefined) {
    if (raw.routes !== undefined) throw fail('BATON_QUEUE_ROUTES', 'needs BATON_CLUSTERS');
    if (raw.defaultCluster !== undefined) throw fail('BATON_DEFAULT_CLUSTER', 'needs BATON_CLUSTERS');
    return undefined;
  }
  if (raw.databaseUrl !== undefined) throw fail('BATON_CLUSTERS', 'set either DATABASE_URL or BATON_CLUSTERS, not both');
  if (raw.pooler !== 'none') throw fail('BATON_CLUSTERS', 'not with BATON_POOLER=transaction (each cluster is reached directly)');
  const clusters: Record<string, string> = {};
  for (const [name, url] of pairs(raw.clusters, 'BATON_CLUSTERS', 'name=URL')) {
    if (name in clusters) throw fail('BATON_CLUSTERS', `cluster ${name} is listed twice`);
    const r = pgUrl.safeParse(url);
    // The URL itself is never repeated: it may hold a password.
    if (!r.success) throw fail('BATON_CLUSTERS', `cluster ${name}: ${r.error.issues[0]?.message ?? 'not a URL'}`);
    clusters[name] = url;
  }
  const routes: Record<string, string> = {};
  for (const [queue, cluster] of pairs(raw.routes ?? '', 'BATON_QUEUE_ROUTES', 'queue=cluster')) routes[queue] = cluster;
  let parsed: ReturnType<typeof parseShardRouting>;
  try {
    parsed = parseShardRouting({ clusters: Object.keys(clusters), routes, defaultCluster: raw.defaultCluster }, NAMES);
  } catch (err) {
    if (!isBatonError(err)) throw err;
    // The message starts with the setting at fault (it may name another further on).
    const named = (Object.values(NAMES) as SettingName[]).filter((n) => err.message.includes(n));
    const setting = named.sort((x, y) => err.message.indexOf(x) - err.message.indexOf(y))[0] ?? 'BATON_CLUSTERS';
    throw new ConfigError(`invalid configuration: ${err.message.replace(/^invalid sharding options: /, '')}`, setting);
  }
  const unrouted = Object.keys(queues ?? {}).filter((q) => parsed.routes[q] === undefined && parsed.defaultCluster === null);
  if (unrouted.length > 0) {
    throw fail(
      'BATON_QUEUE_ROUTES',
      `BATON_QUEUES works ${unrouted.join(', ')}, which no route names (route them, or set BATON_DEFAULT_CLUSTER)`,
    );
  }
  return Object.freeze({ clusters: Object.freeze(clusters), routes: Object.freeze(routes), defaultCluster: raw.defaultCluster });
}
