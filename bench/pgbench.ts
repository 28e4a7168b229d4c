// The database's own ceiling: pgbench drives the engine's claim and complete statements
// (text taken from src/db/pg/queries/job.ts, so they cannot drift) at batch 1 and 50 (the
// targets' reference) and 200 (about the batch Baton's claims reach in the throughput run),
// each transaction = claim N + complete those N, as the engine does, prepared protocol.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
import { jobQueries } from '../src/db/pg/queries/job.ts';
import { quoteSchema } from '../src/driver/schema-name.ts';
import { type Ctx, withDatabase } from './scenarios/context.ts';
import { JOB_TYPE, QUEUE } from './systems/types.ts';

const run = promisify(execFile);
const TEMPLATE = fileURLToPath(new URL('./pgbench/claim-complete.sql', import.meta.url));

export interface PgbenchResult {
  name: string;
  batch: number;
  clients: number;
  transactions: number;
  tps: number;
  jobsPerSec: number;
  latencyMs: number;
}

function pgbenchBinary(): string {
  const candidates = ['/usr/lib/postgresql/15/bin/pgbench', '/usr/lib/postgresql/16/bin/pgbench', '/usr/bin/pgbench'];
  return candidates.find((c) => existsSync(c)) ?? 'pgbench';
}

/** Fills the template with the engine's own statements, positional parameters mapped to pgbench variables. */
export async function buildScript(): Promise<string> {
  const q = jobQueries(quoteSchema('baton'));
  const claim = q.claim.open.text
    .replace(/\$1\b/g, `'${QUEUE}'`)
    .replace(/\$2\b/g, ':batch')
    .replace(/\$3\b/g, `'pgbench'`)
    .replace(/\$4::boolean/g, 'true')
    .replace(/\$5\b/g, '5000')
    // WITH picked AS (...) UPDATE ... RETURNING ...: make the UPDATE a second CTE and aggregate
    // its rows into one for \gset (a data-modifying WITH cannot be nested in another).
    .replace(/\)\s*UPDATE\b/, '), claimed AS (UPDATE')
    .concat(') SELECT array_agg(id) AS ids, array_agg(lease_token) AS toks FROM claimed');
  if (!claim.includes('claimed AS (UPDATE')) throw new Error('pgbench: the claim statement is no longer WITH picked AS (...) UPDATE ...');
  const complete = q.completeMany.open.text
    .replace(/\$1::bigint\[\]/g, ':ids::bigint[]')
    .replace(/\$2::bigint\[\]/g, ':toks::bigint[]')
    .replace(/\$3::jsonb\[\]/g, 'NULL::jsonb[]'); // no-op handlers return nothing: the engine sends no results array
  const template = await readFile(TEMPLATE, 'utf8');
  const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();
  return template.replace('{{CLAIM}}', oneLine(claim)).replace('{{COMPLETE}}', oneLine(complete));
}

export async function pgbenchCeiling(ctx: Ctx): Promise<PgbenchResult[]> {
  const script = await buildScript();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'baton-pgbench-'));
  const file = path.join(dir, 'claim-complete.sql');
  await writeFile(file, script);
  const out: PgbenchResult[] = [];
  try {
    for (const batch of [1, 50, 200]) {
      for (const clients of ctx.args.quick ? [1] : [1, 4]) {
        const jobsPerClient = ctx.args.quick ? 200 : batch === 1 ? 5_000 : 25_000;
        const txPerClient = Math.ceil(jobsPerClient / batch);
        ctx.progress.update(`pgbench claim+complete batch ${batch}, ${clients} client(s)`);
        out.push(
          await withDatabase(ctx, `pgbench_${batch}_${clients}`, async (url) => {
            const pool = new pg.Pool({ connectionString: url, max: 1 });
            // DROP DATABASE ... WITH (FORCE) may reach a client still closing: never crash on it.
            pool.on('error', () => undefined);
            try {
              await migrate(pool, { schema: 'baton' });
              // Enough pending rows that no claim ever comes back empty.
              await pool.query(
                `INSERT INTO baton.jobs (queue, job_type, payload) SELECT $1, $2, jsonb_build_object('seq', g) FROM generate_series(1, $3::int) g`,
                [QUEUE, JOB_TYPE, txPerClient * batch * clients + batch * clients],
              );
              await pool.query('VACUUM ANALYZE baton.jobs');
            } finally {
              await pool.end();
            }
            const args = [
              '-n',
              '-M',
              'prepared',
              '-f',
              file,
              '-D',
              `batch=${batch}`,
              '-c',
              String(clients),
              '-j',
              String(Math.min(clients, 2)),
              '-t',
              String(txPerClient),
              url,
            ];
            const { stdout } = await run(pgbenchBinary(), args, { maxBuffer: 1 << 22 });
            const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1]);
            const tx = Number(/number of transactions actually processed: (\d+)/.exec(stdout)?.[1]);
            const lat = Number(/latency average = ([\d.]+) ms/.exec(stdout)?.[1]);
            const failed = Number(/number of failed transactions: (\d+)/.exec(stdout)?.[1] ?? 0);
            if (!Number.isFinite(tps) || tx !== txPerClient * clients || failed > 0) {
              throw new Error(`pgbench batch ${batch}: unexpected output: ${stdout.slice(-600)}`);
            }
            return { name: `claim+complete`, batch, clients, transactions: tx, tps, jobsPerSec: tps * batch, latencyMs: lat };
          }),
        );
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}
