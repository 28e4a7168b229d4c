// Runs once per `vitest run`: picks the PostgreSQL server, builds one migrated
// template database, and hands both to the test files. Teardown drops the
// template, any database of this run a file left behind, and stops what it started.

import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/db/migrate.ts';
import { createDatabase, databaseUrl, dropDatabase, listDatabases, quoteIdent, uniqueSuffix, withAdmin } from './pg-admin.ts';
import { type PgServerKind, redact, startPgServer } from './pg-server.ts';

/** Schema the template is migrated into (the engine's default). */
export const TEMPLATE_SCHEMA = 'baton';

export interface TestPgInfo {
  /** Superuser URL of the server; create databases on it, never use its own database. */
  adminUrl: string;
  /** Name of the migrated template database (schema `baton`), IS_TEMPLATE, no connections allowed. */
  template: string;
  /** Prefix every database of this run carries, so teardown can sweep leftovers. */
  dbPrefix: string;
  kind: PgServerKind;
}

declare module 'vitest' {
  export interface ProvidedContext {
    batonPg: TestPgInfo;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPgServer();
  const run = uniqueSuffix();
  const dbPrefix = `baton_t_${run}_`;
  const template = `baton_tpl_${run}`;
  const log = (msg: string) => {
    if (process.env.BATON_TEST_QUIET !== '1') process.stderr.write(`[test-db] ${msg}\n`);
  };
  log(`server: ${server.description}`);

  const teardown = async () => {
    try {
      const leftovers = await listDatabases(server.adminUrl, dbPrefix);
      if (leftovers.length) log(`dropping ${leftovers.length} database(s) a test file left behind: ${leftovers.join(', ')}`);
      for (const name of leftovers) await dropDatabase(server.adminUrl, name);
      await withAdmin(server.adminUrl, async (c) => {
        const exists = await c.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [template]);
        if (exists.rowCount) {
          // A template database cannot be dropped until it stops being one.
          await c.query(`ALTER DATABASE ${quoteIdent(template)} WITH IS_TEMPLATE false`);
          await c.query(`DROP DATABASE ${quoteIdent(template)} WITH (FORCE)`);
        }
      });
    } finally {
      await server.stop();
    }
  };

  try {
    await createDatabase(server.adminUrl, template, 'template0');
    const pool = new pg.Pool({ connectionString: databaseUrl(server.adminUrl, template), max: 1 });
    pool.on('error', () => undefined);
    try {
      const { applied } = await migrate(pool, { schema: TEMPLATE_SCHEMA });
      log(`template ${template}: applied ${applied.join(', ') || 'nothing'}`);
    } finally {
      await pool.end();
    }
    // ALLOW_CONNECTIONS false: a stray connection to the template would make every clone fail.
    await withAdmin(server.adminUrl, (c) =>
      c.query(`ALTER DATABASE ${quoteIdent(template)} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`),
    );
  } catch (err) {
    await teardown().catch(() => undefined);
    throw new Error(`test database setup failed on ${redact(server.adminUrl)}: ${(err as Error).message}`, { cause: err });
  }

  project.provide('batonPg', { adminUrl: server.adminUrl, template, dbPrefix, kind: server.kind });
  return teardown;
}
