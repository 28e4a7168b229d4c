// Where the daemon's PostgreSQL comes from: DATABASE_URL when set, otherwise
// the embedded server in BATON_DATA_DIR. close() stops only what we started.

import type { Logger } from '../core/logger.ts';
import type { DaemonConfig } from './env.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-pg.ts';

export interface DatabaseHandle {
  connectionString: string;
  /** Set when the embedded server is in use. */
  embedded: EmbeddedPostgres | undefined;
  /** Stops the embedded server if this process started it. Idempotent. */
  close(): Promise<void>;
}

export async function openDatabase(config: DaemonConfig, logger: Logger): Promise<DatabaseHandle> {
  if (config.databaseUrl !== undefined) {
    logger.info({ database: redact(config.databaseUrl) }, 'using DATABASE_URL');
    return { connectionString: config.databaseUrl, embedded: undefined, close: async () => undefined };
  }
  const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.pgPort, logger });
  logger.info({ dataDir: config.dataDir, port: embedded.port }, 'using embedded PostgreSQL (DATABASE_URL unset)');
  return { connectionString: embedded.connectionString, embedded, close: () => embedded.stop() };
}

/** The URL without its password, for logs. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}
