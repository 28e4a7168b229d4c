import pg from 'pg';
import { migrate } from './src/db/migrate.ts';
import { flowQueries } from './src/db/pg/queries/flow.ts';

const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
await admin.connect();
await admin.query('DROP DATABASE IF EXISTS scratch_plan');
await admin.query('CREATE DATABASE scratch_plan');
const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/scratch_plan', max: 1 });
await migrate(pool, { schema: 'baton' });
const fq = flowQueries('"baton"');
const N = 20000;
const B = Number(process.env.B ?? 10);
const constText = fq.claimPlain.text.replace('LIMIT $2', `LIMIT ${B}`).replace("WHERE state = 'pending'", `WHERE $2::integer = ${B} AND state = 'pending'`);
for (const [label, text] of [['plain auto', fq.claimPlain.text], ['const auto', constText], ['plain auto', fq.claimPlain.text], ['const auto', constText]] as const) {
  await pool.query('TRUNCATE baton.jobs');
  await pool.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'q', 'x' FROM generate_series(1, $1::int)`, [N]);
  await pool.query('VACUUM ANALYZE baton.jobs');
  const c = await pool.connect();
  const t0 = performance.now();
  let n = 0;
  for (;;) {
    const r = await c.query({ name: label, text, values: ['q', B, 'w', true, 60000], rowMode: 'array' });
    if (r.rowCount === 0) break;
    n += r.rowCount!;
  }
  const ms = performance.now() - t0;
  const ps = await c.query(`SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1`, [label]);
  console.log(label, B, `${n} jobs`, `${((ms * 1000) / n).toFixed(1)} µs/job wall`, JSON.stringify(ps.rows[0]));
  c.release(true);
}
await pool.end();
await admin.query('DROP DATABASE scratch_plan');
await admin.end();
