// `npm run bench:claim-sparse`: what one claim of one job costs, the statement a sparse start
// latency waits for, by schema and by statement. Each variant is a database of its own on a
// tuned server of the bench's own: the base ref's schema and claim statement (built as
// bench:ab builds it), this tree's, and this tree's with one thing taken away or swapped.
// Rounds interleave the variants job by job (one insert, one timed claim, one completion),
// the order reversed every other round, so drift and noise fall on all of them alike.
// Writes results/claim-sparse/claim-sparse-<date>.{json,md}. Nothing here is judged.
//
//   npm run bench:claim-sparse -- [--base fc86693] [--jobs 3000] [--rounds 3] [--limit 10]
//                                 [--batch 1] [--variants engine,no-probe,...] [--no-autovacuum]
//
// --batch N: each step inserts N jobs and times one claim of all N (LIMIT at least N), the
// claim a draining worker sends, where the per-row costs of the schema weigh more than the
// statement's fixed ones.

import { parseArgs } from 'node:util';
import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
import { flowClaimQueries } from '../src/db/pg/queries/flow-control-claim.ts';
import { TIMELINE_TOKEN_OFFSET } from '../src/db/pg/queries/job-fragments.ts';
import { abCacheDir, buildRef } from './ab/build.ts';
import { machineRecord } from './machine.ts';
import { writeResults } from './report/write-results.ts';
import { openServer } from './server.ts';
import { percentile } from './stats.ts';

const { values: flags } = parseArgs({
  options: {
    base: { type: 'string', default: 'fc86693' },
    jobs: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '3' },
    limit: { type: 'string', default: '10' },
    batch: { type: 'string', default: '1' },
    variants: { type: 'string' },
    /** Turn autovacuum off on every variant's jobs table, so a vacuum's work never lands in a timed claim. */
    'no-autovacuum': { type: 'boolean', default: false },
    /** After each round, print the scans of each session's cached claim plan (EXPLAIN ANALYZE, rolled back). */
    plans: { type: 'boolean', default: false },
    out: { type: 'string', default: 'results/claim-sparse' },
  },
});
const JOBS = Number(flags.jobs);
const ROUNDS = Number(flags.rounds);
const BATCH = Number(flags.batch);
if (!Number.isInteger(BATCH) || BATCH < 1) throw new Error('--batch: a positive integer');
/** The claim's LIMIT: a worker's free slots, never fewer than the jobs each step claims. */
const LIMIT = Math.max(Number(flags.limit), BATCH);
/** The first claims of a session pay for its plans. */
const WARM = 100;

interface Statement {
  name: string;
  text: string;
  rowMode?: 'array';
}
type Migrate = (pool: pg.Pool, o: { schema: string }) => Promise<unknown>;

const built = buildRef(flags.base, abCacheDir(), (s) => process.stderr.write(`${s}\n`));
const baseMigrate = ((await import(new URL('db/migrate.js', `file://${built.entry}`).href)) as { migrate: Migrate }).migrate;
const baseJob = (await import(new URL('db/pg/queries/job.js', `file://${built.entry}`).href)) as {
  jobQueries: (schema: string) => { claim: Statement | ((n: number) => Statement) };
};
const baseClaimOf = baseJob.jobQueries('"baton"').claim;
const baseClaim = typeof baseClaimOf === 'function' ? baseClaimOf(LIMIT) : baseClaimOf;
const headClaim = flowClaimQueries('"baton"').claimPlain(LIMIT) as Statement;

/** The plain claim without its probe of the queue's gates (paused, flow-controlled, tenanted). */
const GATE_PROBE = /\s*AND NOT EXISTS \(SELECT 1 FROM "baton"\.queue_gates WHERE queue = \$1\)/;
if (!GATE_PROBE.test(headClaim.text)) throw new Error('the plain claim no longer probes queue_gates: update bench/claim-sparse.ts');
const withoutProbes = headClaim.text.replace(GATE_PROBE, '');

/** `text` without `part`, which it must contain. */
function without(text: string, part: string): string {
  if (!text.includes(part)) throw new Error(`the plain claim no longer has ${JSON.stringify(part)}: update bench/claim-sparse.ts`);
  return text.replace(part, '');
}

/** The indexes of jobs added for capabilities a plain job does not use. */
const FEATURE_INDEXES = ['jobs_fair_idx', 'jobs_keyed_idx', 'jobs_keyed_live_idx', 'jobs_waiting_idx', 'jobs_finished_other_tenant_idx'];

/** The checks of jobs added for capabilities a plain job does not use. */
const NEW_CHECKS = ['jobs_cancel_request_not_queued', 'jobs_concurrency_limit_valid'];

interface Variant {
  id: string;
  label: string;
  migrate: Migrate;
  sql: string[];
  claim: Statement;
}

const ALL_VARIANTS: Variant[] = [
  { id: 'base', label: `${built.label}: its schema and its claim`, migrate: baseMigrate, sql: [], claim: baseClaim },
  { id: 'engine', label: 'this tree: the plain claim as the engine runs it (flow_claim_plain)', migrate, sql: [], claim: headClaim },
  {
    // A second database running exactly what `engine` runs: the spread between the two is the
    // run's noise floor, below which no variant's difference means anything.
    id: 'engine-again',
    label: 'this tree again, the same as engine (a control)',
    migrate,
    sql: [],
    claim: { ...headClaim, name: 'sparse_engine_again' },
  },
  {
    id: 'base-claim',
    label: `this tree's schema, ${built.label}'s claim statement`,
    migrate,
    sql: [],
    claim: { ...baseClaim, name: 'sparse_base_claim' },
  },
  {
    id: 'no-probe',
    label: "the plain claim without its probe of the queue's gates",
    migrate,
    sql: [],
    claim: { ...headClaim, name: 'sparse_no_probe', text: withoutProbes },
  },
  {
    id: 'no-timeline',
    label: "the plain claim without its tokens' timeline offset (pg_walfile_name(pg_current_wal_lsn()) per claim)",
    migrate,
    sql: [],
    claim: { ...headClaim, name: 'sparse_no_timeline', text: without(headClaim.text, ` + ${TIMELINE_TOKEN_OFFSET}`) },
  },
  {
    id: 'no-attempt-check',
    label: "the plain claim without the update's `attempt >= 0` (a plan-steering condition)",
    migrate,
    sql: [],
    claim: { ...headClaim, name: 'sparse_no_attempt_check', text: without(headClaim.text, '\n          AND j.attempt >= 0') },
  },
  {
    id: 'no-feature-indexes',
    label: `without ${FEATURE_INDEXES.join(', ')}`,
    migrate,
    sql: FEATURE_INDEXES.map((i) => `DROP INDEX baton.${i}`),
    claim: headClaim,
  },
  {
    id: 'no-new-checks',
    label: `without ${NEW_CHECKS.join(', ')}`,
    migrate,
    sql: NEW_CHECKS.map((c) => `ALTER TABLE baton.jobs DROP CONSTRAINT ${c}`),
    claim: headClaim,
  },
  {
    id: 'no-probe-indexes-checks',
    label: 'without the probe, those indexes and those checks',
    migrate,
    sql: [...FEATURE_INDEXES.map((i) => `DROP INDEX baton.${i}`), ...NEW_CHECKS.map((c) => `ALTER TABLE baton.jobs DROP CONSTRAINT ${c}`)],
    claim: { ...headClaim, name: 'sparse_no_probe', text: withoutProbes },
  },
];

/** One index of jobs taken away at a time (`no-index-<name>`): run only when named in --variants. */
const ONE_INDEX = [...FEATURE_INDEXES, 'jobs_settled_rare_idx', 'jobs_idempotency_idx', 'jobs_lease_expiry_idx'];
const BY_INDEX: Variant[] = ONE_INDEX.map((i) => ({
  id: `no-index-${i.replace(/^jobs_|_idx$/g, '')}`,
  label: `without ${i}`,
  migrate,
  sql: [`DROP INDEX baton.${i}`],
  claim: headClaim,
}));

/**
 * Opt-in: the claim after ANALYZE of the empty table (as autovacuum may leave a drained one):
 * its statistics then say the table is empty, and the claim's generic plan scans every row.
 */
const ANALYZED_EMPTY: Variant = {
  id: 'analyzed-empty',
  label: 'this tree, jobs ANALYZEd while empty',
  migrate,
  sql: ['ANALYZE baton.jobs'],
  claim: headClaim,
};

/** `--variants a,b`: those after `base`, which every run measures (the ratios are against it). */
const VARIANTS = flags.variants
  ? [ALL_VARIANTS[0]!, ...[...ALL_VARIANTS.slice(1), ...BY_INDEX, ANALYZED_EMPTY].filter((v) => flags.variants!.split(',').includes(v.id))]
  : ALL_VARIANTS;

/** The scans of the session's cached plan for `claim`, one step's jobs pending, the claim rolled back. */
async function planOf(c: pg.Client, claim: Statement): Promise<string> {
  await c.query(INSERT);
  await c.query('BEGIN');
  try {
    const args = CLAIM_VALUES.map((v) => (typeof v === 'string' ? `'${v}'` : String(v))).join(', ');
    const r = await c.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) EXECUTE "${claim.name.replace(/"/g, '""')}"(${args})`);
    const lines = r.rows.map((x: Record<string, string>) => x['QUERY PLAN']!);
    const scans = lines.filter((l) => /Scan|Sort/.test(l)).map((l) => l.replace(/^[\s->]+/, '').replace(/ \(actual.*$/, ''));
    const times = lines.filter((l) => /^(Planning|Execution) Time/.test(l)).join(', ');
    return `${scans.join(' | ')} (${times})`;
  } finally {
    await c.query('ROLLBACK');
  }
}

const INSERT = `INSERT INTO baton.jobs (queue, job_type) SELECT 'q', 'noop' FROM generate_series(1, ${BATCH})`;
const FINISH = `UPDATE baton.jobs SET state = 'succeeded', finished_at = now(), lease_owner = NULL, lease_expires_at = NULL
  WHERE state = 'running'`;
const CLAIM_VALUES = ['q', LIMIT, 'bench-worker', true, 30_000];

const server = await openServer();
const machine = await machineRecord(server);
const command = `npm run bench:claim-sparse -- ${process.argv.slice(2).join(' ')}`.trim();
const perVariant = new Map<string, number[][]>(VARIANTS.map((v) => [v.id, []]));
try {
  for (let round = 0; round < ROUNDS; round++) {
    const sessions: pg.Client[] = new Array(VARIANTS.length);
    const names: string[] = [];
    try {
      // The databases made first in a round claim slower than later ones (two identical
      // variants differed by 1.3-1.5x), so each round starts the list at another variant:
      // over as many rounds as variants, each is made at each place once.
      for (let k = 0; k < VARIANTS.length; k++) {
        const at = (k + round) % VARIANTS.length;
        const v = VARIANTS[at]!;
        const name = `bench_claim_sparse_${process.pid}_${round}_${v.id.replace(/-/g, '_')}`;
        const url = await server.createDatabase(name);
        names.push(name);
        const pool = new pg.Pool({ connectionString: url, max: 1 });
        await v.migrate(pool, { schema: 'baton' });
        for (const s of v.sql) await pool.query(s);
        if (flags['no-autovacuum']) await pool.query('ALTER TABLE baton.jobs SET (autovacuum_enabled = off)');
        await pool.end();
        const c = new pg.Client(url);
        await c.connect();
        // As the engine's sessions run (open-pool.ts), and claims committing without the WAL
        // flush, as a worker's marked sessions do (token-floor.ts): what is left is the statement.
        await c.query('SET jit = off; SET max_parallel_workers_per_gather = 0; SET synchronous_commit = off');
        sessions[at] = c;
      }
      const times = VARIANTS.map(() => [] as number[]);
      for (let i = 0; i < JOBS + WARM; i++) {
        const order = VARIANTS.map((_, j) => j);
        if ((i + round) % 2) order.reverse();
        for (const j of order) {
          const c = sessions[j]!;
          await c.query(INSERT);
          const t0 = performance.now();
          const r = await c.query({ ...VARIANTS[j]!.claim, values: CLAIM_VALUES });
          const ms = performance.now() - t0;
          if (r.rowCount !== BATCH) throw new Error(`${VARIANTS[j]!.id}: a claim took ${r.rowCount} jobs, not ${BATCH}`);
          if (i >= WARM) times[j]!.push(ms);
          await c.query(FINISH);
        }
      }
      for (const [j, v] of VARIANTS.entries()) perVariant.get(v.id)!.push(times[j]!);
      process.stderr.write(`round ${round + 1}: ${VARIANTS.map((v, j) => `${v.id} ${median(times[j]!).toFixed(3)}`).join(', ')}\n`);
      if (flags.plans) for (const [j, v] of VARIANTS.entries()) process.stderr.write(`  ${v.id}: ${await planOf(sessions[j]!, v.claim)}\n`);
    } finally {
      for (const c of sessions) await c?.end().catch(() => undefined);
      for (const n of names) await server.dropDatabase(n);
    }
  }
} finally {
  await server.close();
}

function median(xs: number[]): number {
  return percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );
}

const rows = VARIANTS.map((v) => {
  const rounds = perVariant.get(v.id)!;
  const p50s = rounds.map(median);
  const p90s = rounds.map((xs) =>
    percentile(
      [...xs].sort((a, b) => a - b),
      90,
    ),
  );
  return { id: v.id, label: v.label, p50ByRound: p50s, p90ByRound: p90s, p50: median(p50s), p90: median(p90s) };
});
const base = rows[0]!;
const md = [
  `# bench:claim-sparse ${built.label} vs this tree`,
  '',
  `Command: \`${command}\``,
  '',
  `Machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.os}, Node ${machine.node}; load average at the start ${machine.loadAvgAtStart.join('/')}. ` +
    `Tree: ${machine.gitCommit}${machine.gitDirty ? ' (uncommitted changes)' : ''}. PostgreSQL ${machine.postgres.version}, ${machine.postgres.source}; ` +
    `settings ${Object.entries(machine.postgres.tuned)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}.`,
  '',
  `${BATCH === 1 ? 'One job' : `${BATCH} jobs`} per claim (LIMIT ${LIMIT}, as a worker of ${LIMIT} free slots asks), ${JOBS} timed claims per variant per round after ${WARM} untimed, ${ROUNDS} rounds; ` +
    'the claim round trip from the client, synchronous_commit off. Ratios are the median of the rounds against `base`.',
  '',
  '| variant | what it runs | p50 ms, round by round | p50 ms | p90 ms | p50 ratio |',
  '|---|---|---|---:|---:|---:|',
  ...rows.map(
    (r) =>
      `| ${r.id} | ${r.label} | ${r.p50ByRound.map((x) => x.toFixed(3)).join(', ')} | ${r.p50.toFixed(3)} | ${r.p90.toFixed(3)} | ${(r.p50 / base.p50).toFixed(3)}x |`,
  ),
  '',
].join('\n');
const out = await writeResults(
  flags.out,
  'claim-sparse',
  { command, machine, base: built, limit: LIMIT, batch: BATCH, jobs: JOBS, rounds: rows },
  md,
);
process.stdout.write(`${md}\nwrote ${out}.md\n`);
