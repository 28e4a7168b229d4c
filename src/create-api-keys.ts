// Composition of API keys (src/core/api-keys.ts) over node-postgres: a small pool of their own
// (or the caller's), on the schema the engine uses. The HTTP layer and the CLI take one each.

import { type ApiKeys, createApiKeys } from './core/api-keys.ts';
import { SCHEMA_DEFAULT } from './core/config.ts';
import { PgApiKeyStore } from './db/pg/api-key-store.ts';
import { ConnectionStringError, isMultiHost, parseConnectionString } from './db/pg/multi-host.ts';
import { openPool, type PoolerMode } from './db/pg/open-pool.ts';
import type { Queryable } from './db/pg/pool.ts';
import { isValidSchemaName, quoteSchema } from './driver/schema-name.ts';
import { BatonError } from './types/errors.ts';

/** Options of openApiKeys: a pool or connection string, the schema, how long a verified key is cached. */
export interface ApiKeysOptions {
  /** A pool to use (not ended by close()). Either pool or connectionString is required. */
  pool?: Queryable;
  connectionString?: string;
  /** 'transaction': connectionString goes through a transaction pooler (see BatonOptions.pooler). Default 'none'. */
  pooler?: PoolerMode;
  /** The engine's schema. Default "baton". */
  schema?: string;
  /** How long a verified key is trusted from memory (the revocation bound). Default 5000 ms. */
  cacheMs?: number;
}

/** The API key store openApiKeys returns, with close() to end the pool it built. */
export type ClosableApiKeys = ApiKeys & { close(): Promise<void> };

/** Opens the API key store outside an engine, e.g. to create the first key before the daemon runs (docs/security.md). */
export function openApiKeys(opts: ApiKeysOptions): ClosableApiKeys {
  const schema = opts.schema ?? SCHEMA_DEFAULT;
  if (!isValidSchemaName(schema)) throw new BatonError('INVALID_CONFIG', `invalid schema name ${JSON.stringify(schema)}`);
  if (!opts.pool && !opts.connectionString) throw new BatonError('INVALID_CONFIG', 'openApiKeys: pool or connectionString is required');
  const own = opts.pool
    ? null
    : openPool(
        {
          ...connectionConfig(opts.connectionString as string, opts.pooler ?? 'none'),
          max: 2,
          connectionTimeoutMillis: 5_000,
          // A session setting sent at connect: a transaction pooler refuses it.
          ...(opts.pooler !== 'transaction' && { statement_timeout: 10_000 }),
          query_timeout: 10_000,
          application_name: 'baton-keys',
        },
        opts.pooler ?? 'none',
      );
  const keys = createApiKeys(new PgApiKeyStore((opts.pool ?? own) as Queryable, quoteSchema(schema)), {
    ...(opts.cacheMs === undefined ? {} : { cacheMs: opts.cacheMs }),
  });
  return Object.assign(keys, { close: async () => void (await own?.end()) });
}

/** The pool's connection settings; INVALID_CONFIG for a bad URL, or several hosts behind a transaction pooler. */
function connectionConfig(url: string, pooler: PoolerMode) {
  let config: ReturnType<typeof parseConnectionString>;
  try {
    config = parseConnectionString(url, 'connectionString');
  } catch (err) {
    if (err instanceof ConnectionStringError) throw new BatonError('INVALID_CONFIG', `openApiKeys: ${err.message}`);
    throw err;
  }
  if (pooler === 'transaction' && isMultiHost(config)) {
    throw new BatonError('INVALID_CONFIG', "openApiKeys: pooler: 'transaction': the pooler's connectionString names one host");
  }
  return config;
}
