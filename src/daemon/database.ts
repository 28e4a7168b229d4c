// Where the daemon's PostgreSQL comes from: BATON_CLUSTERS (several, the home cluster's URL
// for what lives on one), DATABASE_URL when set, otherwise the embedded server in
// BATON_DATA_DIR. close() stops only what we started.

import type { Baton } from '../core/baton.ts';
import type { Logger } from '../core/logger.ts';
import { type BatonOptions, createBaton } from '../create-baton.ts';
import { buildShardedBaton } from '../create-sharded-baton.ts';
import { newClient, parseConnectionString } from '../db/pg/multi-host.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './embedded-pg.ts';
import type { DaemonConfig } from './env.ts';
import { PlainError } from './plain-error.ts';

export interface DatabaseHandle {
  connectionString: string;
  /** Set when the embedded server is in use. */
  embedded: EmbeddedPostgres | undefined;
  /** Stops the embedded server if this process started it. Idempotent. */
  close(): Promise<void>;
}

/** How createBaton and the key store reach the database: its URL, through a pooler or not, and the direct URL. */
export function connectionOptions(config: DaemonConfig, db: DatabaseHandle) {
  return {
    connectionString: db.connectionString,
    pooler: config.pooler,
    ...(config.directUrl !== undefined && { directConnectionString: config.directUrl }),
  };
}

/**
 * The daemon's engine on its database: a sharded one over BATON_CLUSTERS (poolSize per
 * cluster), or one on `db`. `o`: every createBaton option but the connection.
 */
export function openEngine(
  config: DaemonConfig,
  db: DatabaseHandle,
  o: Omit<BatonOptions, 'pool' | 'connectionString' | 'pooler' | 'directConnectionString'>,
): Baton {
  const s = config.sharding;
  if (s === undefined) return createBaton({ ...o, ...connectionOptions(config, db) });
  return buildShardedBaton(
    {
      ...o,
      clusters: { ...s.clusters },
      routes: { ...s.routes },
      ...(s.defaultCluster === undefined ? {} : { default: s.defaultCluster }),
    },
    { clusters: 'BATON_CLUSTERS', routes: 'BATON_QUEUE_ROUTES', defaultCluster: 'BATON_DEFAULT_CLUSTER' },
  );
}

/** How long the first connection to a database URL may take before start-up gives up. */
const CONNECT_TIMEOUT_MS = 10_000;

/** A database URL could not be connected to; the message names the URL (password masked), the setting unless DATABASE_URL, and why. */
export class DatabaseUnreachableError extends PlainError {
  readonly code = 'DB_UNAVAILABLE';
  constructor(url: string, cause: unknown, setting = 'DATABASE_URL') {
    const which = setting === 'DATABASE_URL' ? '' : ` (${setting})`;
    super(`cannot connect to PostgreSQL at ${redact(url)}${which}: ${reason(cause)}`, { cause });
  }
}

/**
 * DATABASE_URL (after one connection proves it reachable, so every command fails the
 * same plain way when it is not), or the embedded server.
 * @throws DatabaseUnreachableError, EmbeddedPostgresError
 */
export async function openDatabase(config: DaemonConfig, logger: Logger): Promise<DatabaseHandle> {
  if (config.sharding !== undefined) {
    const { clusters, defaultCluster } = config.sharding;
    for (const [cluster, url] of Object.entries(clusters)) {
      logger.info({ cluster, database: redact(url) }, 'using BATON_CLUSTERS');
      await probe(url, 'BATON_CLUSTERS');
    }
    // Cron, workflows, the outbox and API keys live on the home cluster.
    const home = defaultCluster ?? (Object.keys(clusters)[0] as string);
    return { connectionString: clusters[home] as string, embedded: undefined, close: async () => undefined };
  }
  if (config.databaseUrl !== undefined) {
    logger.info({ database: redact(config.databaseUrl), pooler: config.pooler }, 'using DATABASE_URL');
    await probe(config.databaseUrl, 'DATABASE_URL');
    // Behind a transaction pooler the session work (LISTEN, presence and leader locks,
    // migrations) goes to BATON_DIRECT_URL: a wrong one stops start-up here, named, instead of
    // failing later in the background.
    if (config.directUrl !== undefined) await probe(config.directUrl, 'BATON_DIRECT_URL');
    return { connectionString: config.databaseUrl, embedded: undefined, close: async () => undefined };
  }
  const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.pgPort, logger });
  logger.info({ dataDir: embedded.dataDir, port: embedded.port }, 'using embedded PostgreSQL (DATABASE_URL unset)');
  return { connectionString: embedded.connectionString, embedded, close: () => embedded.stop() };
}

/** The URL without its password, for logs (a multi-host URL too, which URL cannot parse). */
export function redact(url: string): string {
  const m = /^([a-z]+:\/\/[^:@/?#]*:)([^@/?#]*)@/i.exec(url);
  return m ? `${m[1]}***@${url.slice(m[0].length)}` : url;
}

async function probe(url: string, setting: string): Promise<void> {
  const client = newClient({ ...parseConnectionString(url, setting), connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    throw new DatabaseUnreachableError(url, err, setting);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** One line on why a connection failed; an AggregateError (one per address tried) has no message of its own. */
function reason(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) return [...new Set(err.errors.map(reason))].join('; ');
  if (err instanceof Error) return err.message || (err as NodeJS.ErrnoException).code || err.name;
  return String(err);
}
