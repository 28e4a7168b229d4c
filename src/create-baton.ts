// Composition of the library: turns options into a running engine wired to
// node-postgres (pool, LISTEN connection, presence connection).

import type { Baton } from './core/baton.ts';
import type { EngineConfigInput } from './core/config.ts';
import type { HandlerMap } from './core/handler.ts';
import type { Logger } from './core/logger.ts';
import type { PgPoolLike } from './db/pg/pool.ts';

export interface BatonOptions extends EngineConfigInput {
  /** A pg.Pool to use (Baton does not end it on stop). Either pool or connectionString is required. */
  pool?: PgPoolLike;
  /** Used to build a pool (ended on stop) and the LISTEN / presence connections. */
  connectionString?: string;
  /** Max connections of the pool Baton builds. Default 10. */
  poolSize?: number;
  /** Job type -> handler. */
  handlers?: HandlerMap;
  /** pino-compatible logger; silent by default. */
  logger?: Logger;
}

export function createBaton(_options: BatonOptions): Baton {
  throw new Error('not implemented yet');
}
