// Applies migrations/NNNN_*.sql in order, each in its own transaction, under a
// session advisory lock so any number of processes may migrate at once.
// Forward-only: an applied file is recorded in schema_migrations and never rerun.

import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MigrateResult } from '../driver/migrations.ts';
import { quoteSchema } from '../driver/schema-name.ts';
import { checkOut, type PgPoolLike } from './pg/pool.ts';
import { migrationQueries } from './pg/queries/migration.ts';

export type { MigrateResult } from '../driver/migrations.ts';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

const MIGRATION_FILE = /^(\d{4})_[a-z0-9_]+\.sql$/;

/** Options of migrate: the schema, and the migrations directory. */
export interface MigrateOptions {
  /** Schema to migrate; created when missing. */
  schema: string;
  /** Directory of NNNN_name.sql files. Defaults to the package's migrations/. */
  migrationsDir?: string;
}

/** Lists migration files in apply order. */
export async function listMigrations(dir = MIGRATIONS_DIR): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => MIGRATION_FILE.test(n));
  return names.sort();
}

/** The migrations not yet applied to `schema`, read without the lock (so through a transaction pooler too). */
export async function pendingMigrations(pool: PgPoolLike, options: MigrateOptions): Promise<string[]> {
  const schema = quoteSchema(options.schema);
  const q = migrationQueries(schema);
  const files = await listMigrations(options.migrationsDir ?? MIGRATIONS_DIR);
  const present = await pool.query<{ present: boolean }>({ ...q.tablePresent, values: [`${schema}.schema_migrations`] });
  if (!present.rows[0]?.present) return files;
  const done = new Set((await pool.query<{ name: string }>(q.listApplied)).rows.map((r) => r.name));
  return files.filter((f) => !done.has(f));
}

/** Migrates `schema` to the newest version. Safe to call concurrently from many processes. */
export async function migrate(pool: PgPoolLike, options: MigrateOptions): Promise<MigrateResult> {
  const dir = options.migrationsDir ?? MIGRATIONS_DIR;
  const q = migrationQueries(quoteSchema(options.schema));
  const files = await listMigrations(dir);
  const out = await checkOut(pool);
  const { client } = out;
  const applied: string[] = [];
  let broken = false;
  try {
    await client.query({ ...q.lock, values: [options.schema] });
    try {
      await client.query(q.createSchema);
      await client.query(q.createTable);
      const done = new Set((await client.query<{ name: string }>(q.listApplied)).rows.map((r) => r.name));
      for (const name of files) {
        if (done.has(name)) continue;
        const sql = await readFile(path.join(dir, name), 'utf8');
        await client.query({ text: 'BEGIN' });
        try {
          await client.query(q.setSearchPath);
          await client.query({ text: sql });
          await client.query({ ...q.record, values: [name] });
          await client.query({ text: 'COMMIT' });
        } catch (err) {
          await client.query({ text: 'ROLLBACK' }).catch(() => undefined);
          throw new Error(`migration ${name} failed: ${(err as Error).message}`, { cause: err });
        }
        applied.push(name);
      }
    } finally {
      await client.query({ ...q.unlock, values: [options.schema] }).catch(() => {
        broken = true;
      });
    }
  } catch (err) {
    broken = true;
    throw err;
  } finally {
    // A connection whose unlock failed may still hold the lock: destroy it rather than pool it.
    out.release(broken);
  }
  return { applied };
}
