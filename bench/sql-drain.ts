// `npm run bench:sql`: what each part of the schema and each claim statement costs a plain job,
// measured at the SQL level, where the engine's own statements (src/db/pg/queries) drain a
// backlog from several clients at once, as a worker's claimers and completer do. Each variant
// takes one thing away (an index, the finished-job counters, the dependency trigger) or swaps
// the claim statement; every round drains a fresh database per variant, the variants' order
// reversed every other round, on a tuned server of the bench's own. Server time per statement
// comes from pg_stat_statements, WAL from the log position. Writes
// results/sql-drain/sql-drain-<date>.{json,md}. Nothing here is judged: it attributes cost.

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
import { flowQueries } from '../src/db/pg/queries/flow-control.ts';
import { jobQueries } from '../src/db/pg/queries/job.ts';
import { quoteSchema } from '../src/driver/schema-name.ts';
import { machineRecord } from './machine.ts';
import { openServer } from './server.ts';
import { distribution } from './stats.ts';

interface Variant {
  id: string;
  label: string;
  /** Run after the migrations, before the jobs are written. */
  sql: string[];
  claim: 'plain' | 'solo' | 'fifo';
  /** The completion without its finished-job counter upsert, or without its block record (0024). */
  completion?: 'uncounted' | 'unblocked';
  /** Run on each draining client's session before its first claim. */
  session?: string[];
}

const VARIANTS: Variant[] = [
  { id: 'engine', label: "as the engine runs it (a queue without other tenants' jobs: flow_claim_plain)", sql: [], claim: 'plain' },
  { id: 'solo', label: 'the one-tenant fair claim (flow_claim_solo, a marked queue)', sql: [], claim: 'solo' },
  { id: 'fifo', label: 'the FIFO claim (fairness none)', sql: [], claim: 'fifo' },
  {
    id: 'no-mark-trigger',
    label: 'without the tenant mark trigger (0023)',
    sql: ['DROP TRIGGER jobs_mark_tenant_queue ON baton.jobs'],
    claim: 'plain',
  },
  {
    id: 'queue-index',
    label: 'with the index of finished jobs by queue that 0024 replaced (jobs_finished_queue_id_idx)',
    sql: ['CREATE INDEX jobs_finished_queue_id_idx ON baton.jobs (queue, id) WHERE finished_at IS NOT NULL'],
    claim: 'plain',
  },
  {
    id: 'no-blocks',
    label:
      "completion without recording its jobs' blocks (finished_blocks): the engine's completion of a batch whose blocks it recorded moments ago",
    sql: [],
    claim: 'plain',
    completion: 'unblocked',
  },
  {
    id: 'generic-plans',
    label:
      'the clients on plan_cache_mode = force_generic_plan: the named claim on a cached generic plan (the unnamed completion is still planned each time)',
    sql: [],
    claim: 'plain',
    session: ['SET plan_cache_mode = force_generic_plan'],
  },
  { id: 'no-counters', label: 'completion without the finished-job counters', sql: [], claim: 'plain', completion: 'uncounted' },
  {
    id: 'no-trigger',
    label: 'without the dependency trigger',
    sql: ['DROP TRIGGER jobs_release_dependents ON baton.jobs'],
    claim: 'plain',
  },
  { id: 'no-claim-index', label: 'without jobs_claim_idx', sql: ['DROP INDEX baton.jobs_claim_idx'], claim: 'solo' },
  { id: 'no-fair-index', label: 'without jobs_fair_idx', sql: ['DROP INDEX baton.jobs_fair_idx'], claim: 'plain' },
];

const { values: flags } = parseArgs({
  options: {
    jobs: { type: 'string', default: '50000' },
    clients: { type: 'string', default: '4' },
    batch: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    variants: { type: 'string', default: VARIANTS.map((v) => v.id).join(',') },
    out: { type: 'string', default: 'results/sql-drain' },
  },
});
const JOBS = Number(flags.jobs);
const CLIENTS = Number(flags.clients);
const BATCH = Number(flags.batch);
const ROUNDS = Number(flags.rounds);
const chosen = flags.variants.split(',').map((id) => {
  const v = VARIANTS.find((x) => x.id === id.trim());
  if (!v) throw new Error(`--variants: unknown "${id}" (allowed: ${VARIANTS.map((x) => x.id).join(', ')})`);
  return v;
});

const schema = quoteSchema('baton');
const job = jobQueries(schema);
const flow = flowQueries(schema);
/**
 * The completion statement of a batch of n without its counter CTE (made a no-op), or without its
 * block CTE; named like the engine's (one text per batch size up to SIZE_IN_TEXT_MAX), under a
 * name of its own.
 */
type Statement = { name?: string; text: string };
const variantOf = (kind: string, q: Statement, text: string): Statement => ({ ...(q.name ? { name: `${q.name}_${kind}` } : {}), text });
const completions: Record<'uncounted' | 'unblocked', (n: number) => Statement> = {
  uncounted: (n) =>
    variantOf(
      'uncounted',
      job.completeMany(n),
      job.completeMany(n).text.replace(/counted AS \([\s\S]*?DO UPDATE SET n = s\.n \+ excluded\.n\)/, 'counted AS (SELECT 1)'),
    ),
  // What the engine sends for a batch whose blocks it recorded moments ago (recorded-blocks.ts).
  unblocked: (n) => job.completeManyBlocksKnown(n),
};
for (const [kind, of] of Object.entries(completions)) {
  if (of(BATCH).text === job.completeMany(BATCH).text) throw new Error(`bench:sql: the completion has no CTE to take out for ${kind}`);
}

interface Sample {
  variant: string;
  round: number;
  jobsPerSec: number;
  /** The inserts' server time (1,000 jobs a statement, one client, before the drain). */
  enqueueUsPerJob: number;
  claimUsPerJob: number;
  /** The claim's planning time: a named statement still planned at every execution while PostgreSQL prefers custom plans. */
  claimPlanUsPerJob: number;
  completeUsPerJob: number;
  /** The completion's planning time (track_planning): unnamed statements are planned at every execution. */
  completePlanUsPerJob: number;
  walBytesPerJob: number;
}

async function drainOnce(server: Awaited<ReturnType<typeof openServer>>, v: Variant, round: number): Promise<Sample> {
  const name = `bench_sql_${v.id.replace(/\W/g, '_')}_${process.pid}`;
  const url = await server.createDatabase(name);
  const pool = new pg.Pool({ connectionString: url, max: CLIENTS + 1 });
  // The drop below ends what is left of the pool's sessions (WITH FORCE): not an error here.
  pool.on('error', () => undefined);
  try {
    await migrate(pool, { schema: 'baton' });
    for (const s of v.sql) await pool.query(s);
    const rows = Array.from({ length: 1_000 }, () => ({
      tenant_id: 'default',
      queue: 'q',
      job_type: 't',
      payload: {},
      priority: 0,
      max_attempts: 5,
    }));
    await server.query('SELECT pg_stat_statements_reset()');
    for (let i = 0; i < JOBS; i += 1_000)
      await pool.query({ ...job.insertMany, values: [JSON.stringify(rows.slice(0, Math.min(1_000, JOBS - i)))] });
    const enqueueMs = sumOf(await statementTimes(server, name), /INSERT INTO .*jobs/, 'exec');
    await pool.query('VACUUM ANALYZE baton.jobs');
    await pool.query('CHECKPOINT');
    const lsn = (await server.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn'))[0]!.lsn;
    await server.query('SELECT pg_stat_statements_reset()');
    const claim = { plain: flow.claimPlain(BATCH), solo: flow.claimSolo(BATCH), fifo: job.claim(BATCH) }[v.claim];
    const complete = (n: number) => (v.completion ? completions[v.completion](n) : job.completeMany(n));
    let done = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        const c = await pool.connect();
        try {
          for (const sql of v.session ?? []) await c.query(sql);
          for (;;) {
            const r = await c.query<unknown[]>({ ...claim, rowMode: 'array', values: ['q', BATCH, 'bench', true, 30_000] });
            const got = r.rows.filter((x) => x[0] !== null);
            if (got.length === 0) return;
            await c.query({ ...complete(got.length), values: [got.map((x) => x[0]), got.map((x) => x[7]), null] });
            done += got.length;
          }
        } finally {
          c.release();
        }
      }),
    );
    const ms = performance.now() - t0;
    if (done !== JOBS) throw new Error(`${v.id}: drained ${done} of ${JOBS} jobs`);
    const wal = (await server.query<{ wal: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::text AS wal', [lsn]))[0]!
      .wal;
    const completion = /state = \$\d+, finished_at = now\(\)|state = 'succeeded', finished_at/;
    const stmts = await statementTimes(server, name);
    const claimed = /lease_token = nextval/;
    const [claimMs, claimPlanMs, completeMs, completePlanMs] = [
      sumOf(stmts, claimed, 'exec'),
      sumOf(stmts, claimed, 'plan'),
      sumOf(stmts, completion, 'exec'),
      sumOf(stmts, completion, 'plan'),
    ];
    return {
      variant: v.id,
      round,
      jobsPerSec: Math.round((JOBS / ms) * 1_000),
      enqueueUsPerJob: hundredths((enqueueMs * 1_000) / JOBS),
      claimUsPerJob: hundredths((claimMs * 1_000) / JOBS),
      claimPlanUsPerJob: hundredths((claimPlanMs * 1_000) / JOBS),
      completeUsPerJob: hundredths((completeMs * 1_000) / JOBS),
      completePlanUsPerJob: hundredths((completePlanMs * 1_000) / JOBS),
      walBytesPerJob: Math.round(Number(wal) / JOBS),
    };
  } finally {
    await pool.end();
    await server.dropDatabase(name);
  }
}

/** Server time in ms (execution and planning) per statement of database `db`, since the last reset. */
async function statementTimes(
  server: Awaited<ReturnType<typeof openServer>>,
  db: string,
): Promise<Array<{ query: string; exec: number; plan: number }>> {
  return server.query<{ query: string; exec: number; plan: number }>(
    `SELECT query, total_exec_time AS exec, total_plan_time AS plan FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`,
    [db],
  );
}

/** The sum of `column` over the statements whose text matches `re`. */
const sumOf = (stmts: Array<{ query: string; exec: number; plan: number }>, re: RegExp, column: 'exec' | 'plan') =>
  stmts.filter((s) => re.test(s.query)).reduce((a, s) => a + s[column], 0);

/** Two decimals. */
const hundredths = (x: number) => Math.round(x * 100) / 100;

async function main(): Promise<void> {
  const startedAt = new Date();
  const server = await openServer('cluster', {
    shared_preload_libraries: 'pg_stat_statements',
    'pg_stat_statements.track': 'top',
    'pg_stat_statements.track_planning': 'on',
  });
  const samples: Sample[] = [];
  try {
    await server.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const machine = await machineRecord(server);
    // Round 0 is a warm-up, not counted.
    for (let r = 0; r <= ROUNDS; r++) {
      const order = r % 2 === 0 ? chosen : [...chosen].reverse();
      for (const v of order) {
        const s = await drainOnce(server, v, r);
        process.stderr.write(`${JSON.stringify(s)}\n`);
        if (r > 0) samples.push(s);
      }
    }
    const command = `npm run bench:sql -- ${process.argv.slice(2).join(' ')}`.trim();
    const med = (v: string, k: keyof Omit<Sample, 'variant' | 'round'>) =>
      distribution(samples.filter((s) => s.variant === v).map((s) => s[k])).p50;
    const runs = (v: string, k: keyof Omit<Sample, 'variant' | 'round'>) =>
      samples
        .filter((s) => s.variant === v)
        .map((s) => s[k])
        .join(', ');
    const base = chosen[0]!.id;
    const figures = [
      'jobsPerSec',
      'enqueueUsPerJob',
      'claimUsPerJob',
      'claimPlanUsPerJob',
      'completeUsPerJob',
      'completePlanUsPerJob',
      'walBytesPerJob',
    ] as const;
    const titles = {
      jobsPerSec: 'jobs/s',
      enqueueUsPerJob: 'enqueue µs/job',
      claimUsPerJob: 'claim µs/job',
      claimPlanUsPerJob: 'claim planning µs/job',
      completeUsPerJob: 'completion µs/job',
      completePlanUsPerJob: 'completion planning µs/job',
      walBytesPerJob: 'WAL bytes/job',
    };
    const md = [
      `# SQL drain: ${JOBS.toLocaleString('en')} jobs, ${CLIENTS} clients, claims of ${BATCH}`,
      '',
      `Command: \`${command}\` (${startedAt.toISOString()}). ${ROUNDS} counted round(s) after a warm-up; each round drains a fresh database per variant, the order reversed every other round.`,
      `Machine: ${JSON.stringify(machine)}`,
      '',
      'Server time per statement from pg_stat_statements (execution, and planning where the figure says so); ratios are against the first variant (above 1 costs more, except jobs/s).',
      '',
      '| variant | figure | run by run | median | ratio |',
      '| --- | --- | --- | ---: | ---: |',
      ...chosen.flatMap((v) =>
        figures.map(
          (k) =>
            `| ${v.id}: ${v.label} | ${titles[k]} | ${runs(v.id, k)} | ${med(v.id, k)} | ${v.id === base ? '' : `${hundredths(med(v.id, k) / med(base, k))}x`} |`,
        ),
      ),
      '',
    ].join('\n');
    const stamp = startedAt.toISOString().slice(0, 16).replace(/[T:]/g, '-');
    await mkdir(flags.out, { recursive: true });
    const out = path.join(flags.out, `sql-drain-${stamp}`);
    await writeFile(
      `${out}.json`,
      `${JSON.stringify({ startedAt, command, machine, settings: { jobs: JOBS, clients: CLIENTS, batch: BATCH, rounds: ROUNDS }, samples }, null, 2)}\n`,
    );
    await writeFile(`${out}.md`, md);
    process.stdout.write(`${md}\nwrote ${out}.md and .json\n`);
  } finally {
    await server.close();
  }
}

await main();
