import pg from 'pg';
import { migrate } from './src/db/migrate.ts';
import { flowQueries } from './src/db/pg/queries/flow.ts';
import { jobQueries } from './src/db/pg/queries/job.ts';
const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
await admin.connect();
await admin.query('DROP DATABASE IF EXISTS scratch_plan');
await admin.query('CREATE DATABASE scratch_plan');
const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/scratch_plan', max: 1 });
await migrate(pool, { schema: 'baton' });
const fq = flowQueries('"baton"');
const jq = jobQueries('"baton"');
await pool.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'q', 'x' FROM generate_series(1, 20000)`);
await pool.query('VACUUM ANALYZE baton.jobs');
const c = await pool.connect();
const v = ["'q'", '10', "'w'", 'true', '60000'];
for (const [label, text] of [['plain', fq.claimPlain.text], ['fifo', jq.claim.text]] as const) {
  await c.query(`PREPARE p AS ${text}`);
  const times: number[] = [];
  for (let i = 0; i < 30; i++) {
    await c.query('BEGIN');
    const r = await c.query(`EXPLAIN (ANALYZE, SUMMARY, FORMAT JSON) EXECUTE p(${v.join(',')})`);
    const plan = (r.rows[0]['QUERY PLAN'] as Array<Record<string, number>>)[0]!;
    times.push(plan['Planning Time']!, plan['Execution Time']!);
    await c.query('ROLLBACK');
  }
  const plan = times.filter((_, i) => i % 2 === 0).sort((a, b) => a - b);
  const exec = times.filter((_, i) => i % 2 === 1).sort((a, b) => a - b);
  console.log(label, 'planning ms median', plan[15], 'execution ms median', exec[15]);
  await c.query('DEALLOCATE p');
}
c.release();
await pool.end();
await admin.query('DROP DATABASE scratch_plan');
await admin.end();
