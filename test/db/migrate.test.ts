// The migration runner against a real server: empty database in a non-public
// schema, idempotent rerun, concurrent runners, schema-name validation, and
// drift of the migrated schema against test/fixtures/schema.sql.

import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { listMigrations, MIGRATIONS_DIR, migrate } from '../../src/db/migrate.ts';
import type { PgPoolLike } from '../../src/db/pg/pool.ts';
import { createTestDatabase, type TestDatabase, useTestDatabase } from '../helpers/db.ts';
import { describeSchema } from '../helpers/schema-snapshot.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/schema.sql', import.meta.url));
const FIXTURE_HEADER =
  '-- The migrated Baton schema, described from the catalog (schema name elided).\n' +
  '-- Checked by test/db/migrate.test.ts. After adding a migration, regenerate with:\n' +
  '--   UPDATE_SCHEMA_FIXTURE=1 npx vitest run test/db/migrate.test.ts\n';

const extra: TestDatabase[] = [];
afterAll(async () => {
  await Promise.all(extra.map((d) => d.drop()));
});
async function emptyDatabase(poolSize = 2): Promise<TestDatabase> {
  const db = await createTestDatabase({ from: 'empty', poolSize });
  extra.push(db);
  return db;
}

async function tablesIn(db: TestDatabase, schema: string): Promise<string[]> {
  const res = await db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
    [schema],
  );
  return res.rows.map((r) => r.table_name);
}

/** A fresh database migrated in schema baton with the migrations before `name` only. */
async function migratedBefore(name: string): Promise<TestDatabase> {
  const db = await emptyDatabase();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'baton-migrations-'));
  try {
    for (const f of (await listMigrations()).filter((n) => n < name)) await copyFile(path.join(MIGRATIONS_DIR, f), path.join(dir, f));
    await migrate(db.pool, { schema: 'baton', migrationsDir: dir });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return db;
}

describe('migrate()', () => {
  it('migrates an empty database into a non-public schema, and a rerun applies nothing', async () => {
    const db = await emptyDatabase();
    const files = await listMigrations();
    expect(files.length).toBeGreaterThan(0);

    const first = await migrate(db.pool, { schema: 'queue_alt' });
    expect(first.applied).toEqual(files);
    expect(await tablesIn(db, 'queue_alt')).toEqual(expect.arrayContaining(['jobs', 'schema_migrations', 'workers']));
    expect(await tablesIn(db, 'public')).toEqual([]);
    const recorded = await db.query<{ name: string }>(`SELECT name FROM queue_alt.schema_migrations ORDER BY name`);
    expect(recorded.rows.map((r) => r.name)).toEqual(files);

    const second = await migrate(db.pool, { schema: 'queue_alt' });
    expect(second.applied).toEqual([]);
    const after = await db.query(`SELECT count(*)::int AS n FROM queue_alt.schema_migrations`);
    expect(after.rows[0].n).toBe(files.length);
  });

  it('0023 marks the queues that already hold jobs of a tenant other than default', async () => {
    const db = await migratedBefore('0023');
    await db.query(`INSERT INTO baton.jobs (queue, tenant_id, job_type, state, finished_at)
      VALUES ('shared', 'acme', 't', 'succeeded', now()), ('shared', 'default', 't', 'pending', NULL),
        ('own', 'default', 't', 'pending', NULL), ('acme-only', 'acme', 't', 'pending', NULL)`);
    await migrate(db.pool, { schema: 'baton' });
    const marked = await db.query<{ queue: string }>(`SELECT DISTINCT queue FROM baton.tenant_queues ORDER BY queue`);
    expect(marked.rows.map((r) => r.queue)).toEqual(['acme-only', 'shared']);
  });

  it('0032 gives a gate to every queue already paused, controlled or marked tenanted', async () => {
    const db = await migratedBefore('0032');
    await db.query(`INSERT INTO baton.paused_queues (queue) VALUES ('p'), ('pc')`);
    await db.query(`INSERT INTO baton.flow_queues (queue, concurrency_limit) VALUES ('pc', 1), ('c', 2)`);
    await db.query(`INSERT INTO baton.tenant_queues (queue) VALUES ('t'), ('t')`);
    await migrate(db.pool, { schema: 'baton' });
    const gates = await db.query<{ queue: string; reason: string }>(`SELECT queue, reason FROM baton.queue_gates ORDER BY queue, reason`);
    expect(gates.rows).toEqual([
      { queue: 'c', reason: 'controlled' },
      { queue: 'p', reason: 'paused' },
      { queue: 'pc', reason: 'controlled' },
      { queue: 'pc', reason: 'paused' },
      { queue: 't', reason: 'tenanted' },
    ]);
  });

  it('0024 records the blocks of the finished jobs already there, and 0025 drops the index of finished jobs by queue', async () => {
    const db = await migratedBefore('0024');
    // Two finished jobs of 'a' in block 0, one of 'b' in block 2; a pending job of 'c' records nothing.
    await db.query(`INSERT INTO baton.jobs (id, queue, job_type, state, finished_at) OVERRIDING SYSTEM VALUE
      VALUES (1, 'a', 't', 'succeeded', now()), (2, 'a', 't', 'cancelled', now()), (600, 'b', 't', 'cancelled', now()),
        (700, 'c', 't', 'pending', NULL)`);
    await migrate(db.pool, { schema: 'baton' });
    const blocks = await db.query<{ queue: string; block: string }>(
      `SELECT queue, block::text FROM baton.finished_blocks ORDER BY queue, block`,
    );
    expect(blocks.rows).toEqual([
      { queue: 'a', block: '0' },
      { queue: 'b', block: '2' },
    ]);
    const index = await db.query(`SELECT 1 FROM pg_indexes WHERE schemaname = 'baton' AND indexname = 'jobs_finished_queue_id_idx'`);
    expect(index.rowCount).toBe(0);
  });

  it('lets 6 concurrent runners on separate pools succeed, applying each file exactly once', async () => {
    const db = await emptyDatabase(1);
    const files = await listMigrations();
    const pools = Array.from({ length: 6 }, () => {
      const p = new pg.Pool({ connectionString: db.url, max: 1 });
      p.on('error', () => undefined);
      return p;
    });
    try {
      // Connect first so the runners race on the advisory lock, not on connection setup.
      await Promise.all(pools.map((p) => p.query('SELECT 1')));
      const results = await Promise.all(pools.map((p) => migrate(p, { schema: 'baton' })));
      const applied = results.flatMap((r) => r.applied).sort();
      expect(applied).toEqual(files);
      const rows = await db.query<{ name: string; n: number }>(
        `SELECT name, count(*)::int AS n FROM baton.schema_migrations GROUP BY name ORDER BY name`,
      );
      expect(rows.rows).toEqual(files.map((name) => ({ name, n: 1 })));
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it.each(['', 'Baton', 'pg_catalog', '1abc', 'a-b', 'x"; DROP SCHEMA public; --', 'a'.repeat(64)])(
    'rejects schema name %j before running any SQL',
    async (schema) => {
      const calls: string[] = [];
      const spy: PgPoolLike = {
        query: async (c) => {
          calls.push(c.text);
          return { rows: [], rowCount: 0 };
        },
        connect: async () => {
          calls.push('connect');
          return {
            query: async (c) => {
              calls.push(c.text);
              return { rows: [], rowCount: 0 };
            },
            release: () => undefined,
          };
        },
      };
      await expect(migrate(spy, { schema })).rejects.toThrow(/schema/i);
      expect(calls).toEqual([]);
    },
  );
});

describe('schema drift', () => {
  const db = useTestDatabase();

  it('the migrated template matches test/fixtures/schema.sql', async () => {
    const actual = `${FIXTURE_HEADER}\n${await describeSchema(db.pool, 'baton')}`;
    if (process.env.UPDATE_SCHEMA_FIXTURE === '1') {
      await writeFile(FIXTURE, actual);
      return;
    }
    const expected = await readFile(FIXTURE, 'utf8').catch(() => '');
    expect(actual, 'migrated schema differs from test/fixtures/schema.sql; if intended, regenerate it with UPDATE_SCHEMA_FIXTURE=1').toBe(
      expected,
    );
  });

  it('a database migrated into another schema has the same shape', async () => {
    const alt = await createTestDatabase({ from: { schema: 'tenant_jobs' }, poolSize: 2 });
    extra.push(alt);
    expect(await describeSchema(alt.pool, 'tenant_jobs')).toBe(await describeSchema(db.pool, 'baton'));
  });
});
