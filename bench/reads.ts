// `npm run bench:reads`: what the admin reads cost next to the history. On the bench's own
// server: every path below against a table with no history (a little live work and 300
// finished jobs, the same in both) and against the same plus ten million finished rows (a
// tenant besides 'default' in every tenth, a dead letter in every thousandth) written with
// generate_series, after ANALYZE. The full one also holds a history of --rows / 10 finished
// workflow runs and as many published outbox messages, for their listings. Median of --requests
// requests per path, alternating the two apps. Writes results/reads/reads-<date>.{json,md}.
// Flags: --rows 10000000 --requests 30 --out results/reads

import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PgWorkflowStore } from '../src/db/pg/workflow-store.ts';
import { createApp } from '../src/http/app.ts';
import { createMetrics } from '../src/http/metrics.ts';
import { createBaton } from '../src/index.ts';
import { machineRecord } from './machine.ts';
import { openServer } from './server.ts';
import { distribution, nowMs } from './stats.ts';

const { values: flags } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000000' },
    requests: { type: 'string', default: '30' },
    out: { type: 'string', default: 'results/reads' },
  },
});
const ROWS = Number(flags.rows);
const REQUESTS = Number(flags.requests);
/** An id in the middle of the history, for keyset pages deep in it. */
const MIDDLE = Math.max(1, Math.floor(ROWS / 2));
/** Finished workflow runs and published outbox messages in the full database's history. */
const SIDE_ROWS = Math.floor(ROWS / 10);
/** An id in the middle of those. */
const SIDE_MIDDLE = Math.max(1, Math.floor(SIDE_ROWS / 2));

/** The paths measured: the scrapes, the console's polls and the listings. */
const PATHS = [
  '/metrics',
  '/api/flow',
  '/api/stats',
  '/api/queues',
  '/api/jobs',
  '/api/jobs?limit=20',
  '/api/jobs?state=succeeded',
  '/api/jobs?state=dead_lettered',
  '/api/jobs?state=pending',
  '/api/jobs?queue=q',
  '/api/jobs?queue=rare',
  '/api/jobs?tenantId=acme',
  '/api/jobs?tenantId=default',
  '/api/jobs?tenantId=acme&state=succeeded',
  '/api/jobs?jobType=nope',
  '/api/jobs?createdAfter=2000-01-01T00:00:00Z',
  '/api/jobs?queue=q&jobType=nope',
  '/api/jobs?offset=1000',
  // Keyset pages from the middle of the history (on the empty database, the cursor lies past
  // every id: its first page).
  `/api/jobs?cursor=${MIDDLE}`,
  `/api/jobs?queue=q&cursor=${MIDDLE}`,
  `/api/jobs?tenantId=default&cursor=${MIDDLE}`,
  `/api/jobs?state=dead_lettered&cursor=${MIDDLE}`,
  '/api/jobs?sort=createdAt&order=desc&limit=20',
  '/api/jobs?sort=createdAt&order=asc&limit=20',
  '/api/jobs?createdBefore=2000-01-01T00:00:00Z',
  '/api/jobs?sort=attempt&order=asc',
  '/api/jobs?queue=rare&sort=attempt&order=asc',
  '/api/jobs?due=true',
  '/api/workflows/runs',
  '/api/workflows/runs?name=wf',
  '/api/workflows/runs?state=succeeded',
  '/api/workflows/runs?state=running',
  '/api/workflows/runs?tenantId=acme',
  `/api/workflows/runs?cursor=${SIDE_MIDDLE}`,
  '/api/outbox/messages',
  '/api/outbox/messages?state=published',
  '/api/outbox/messages?state=pending',
  '/api/outbox/messages?destination=hooks',
  `/api/outbox/messages?cursor=${SIDE_MIDDLE}`,
];

/** A request's time and status, and how many jobs (or items) a listing answered (null: not a listing). */
async function timeRequest(app: ReturnType<typeof createApp>, url: string): Promise<{ ms: number; status: number; items: number | null }> {
  const t0 = nowMs();
  const res = await app.request(url);
  const text = await res.text();
  const ms = nowMs() - t0;
  let items: number | null = null;
  if (res.headers.get('content-type')?.includes('json')) {
    const body = JSON.parse(text) as Record<string, unknown>;
    const list = body.jobs ?? body.runs ?? body.messages;
    if (Array.isArray(list)) items = list.length;
  }
  return { ms, status: res.status, items };
}

async function fill(url: string, rows: number): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    const step = 1_000_000;
    for (let from = 1; from <= rows; from += step) {
      await pool.query(
        `INSERT INTO baton.jobs (queue, tenant_id, job_type, state, attempt, finished_at, started_at, dead_letter_reason)
         SELECT 'q', CASE WHEN g % 10 = 0 THEN 'acme' ELSE 'default' END, 'x',
           CASE WHEN g % 1000 = 0 THEN 'dead_lettered' ELSE 'succeeded' END, 1, now(), now(),
           CASE WHEN g % 1000 = 0 THEN 'attempts_exhausted' END
         FROM generate_series($1::int, $2::int) g`,
        [from, Math.min(rows, from + step - 1)],
      );
      process.stderr.write(`filled ${Math.min(rows, from + step - 1)}\n`);
    }
    // Finished runs (a tenant besides 'default' in every tenth, a cancelled one in every
    // thousandth) and published messages (a dead letter in every thousandth), without jobs.
    const side = Math.floor(rows / 10);
    await pool.query(
      `INSERT INTO baton.workflow_runs (name, tenant_id, state, finished_at)
       SELECT 'wf', CASE WHEN g % 10 = 0 THEN 'acme' ELSE 'default' END,
         CASE WHEN g % 1000 = 0 THEN 'cancelled' ELSE 'succeeded' END, now()
       FROM generate_series(1, $1::int) g`,
      [side],
    );
    await pool.query(
      `INSERT INTO baton.outbox (destination, topic, message_key, max_attempts, state, finished_at, dead_letter_reason)
       SELECT 'hooks', 't', 'h' || g, 5, CASE WHEN g % 1000 = 0 THEN 'dead_lettered' ELSE 'published' END, now(),
         CASE WHEN g % 1000 = 0 THEN 'attempts_exhausted' END
       FROM generate_series(1, $1::int) g`,
      [side],
    );
    process.stderr.write(`filled ${side} runs and ${side} outbox messages\n`);
  } finally {
    await pool.end();
  }
}

/**
 * The same few finished jobs in both databases, written before the history (so in the full one
 * a page of the newest still comes from the history): 100 succeeded, 100 succeeded of tenant
 * acme and 100 dead letters, so every listing answers a full page on both and the two differ by
 * the history alone, not by an empty answer against a page of fifty.
 */
async function recent(url: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await pool.query(
      `INSERT INTO baton.jobs (queue, tenant_id, job_type, state, attempt, finished_at, started_at, dead_letter_reason)
       SELECT 'q', CASE WHEN g % 3 = 1 THEN 'acme' ELSE 'default' END, 'x',
         CASE WHEN g % 3 = 2 THEN 'dead_lettered' ELSE 'succeeded' END, 1, now(), now(),
         CASE WHEN g % 3 = 2 THEN 'attempts_exhausted' END
       FROM generate_series(0, 299) g`,
    );
    // And of runs and messages: 100 finished runs of a workflow 'wf' (every third of tenant
    // acme), 100 published messages to 'hooks'.
    await pool.query(
      `INSERT INTO baton.workflow_runs (name, tenant_id, state, finished_at)
       SELECT 'wf', CASE WHEN g % 3 = 0 THEN 'acme' ELSE 'default' END, 'succeeded', now() FROM generate_series(1, 100) g`,
    );
    await pool.query(
      `INSERT INTO baton.outbox (destination, topic, message_key, max_attempts, state, finished_at)
       SELECT 'hooks', 't', 'r' || g, 5, 'published', now() FROM generate_series(1, 100) g`,
    );
  } finally {
    await pool.end();
  }
}

/** The live work of both databases, the finished counters of what they hold (run counts folded), then VACUUM ANALYZE. */
async function live(url: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await pool.query(`INSERT INTO baton.jobs (queue, job_type) SELECT 'q', 'x' FROM generate_series(1, 1000)`);
    await pool.query(`INSERT INTO baton.jobs (queue, job_type, attempt) SELECT 'rare', 'x', 1 FROM generate_series(1, 10)`);
    await pool.query(`INSERT INTO baton.finished_counts (queue, state, shard, n)
      SELECT queue, state, 0, count(*) FROM baton.jobs WHERE finished_at IS NOT NULL GROUP BY queue, state`);
    // 100 live runs and 100 pending messages (no relay runs in this bench).
    await pool.query(`INSERT INTO baton.workflow_runs (name, state) SELECT 'wf', 'running' FROM generate_series(1, 100)`);
    await pool.query(
      `INSERT INTO baton.outbox (destination, topic, message_key, max_attempts) SELECT 'hooks', 't', 'p' || g, 5 FROM generate_series(1, 100) g`,
    );
    // The finished runs' count deltas folded, as the leader does every few seconds (no engine runs here).
    await new PgWorkflowStore(pool, 'baton').workflowFoldRunCounts();
    await pool.query('VACUUM ANALYZE baton.jobs');
    await pool.query('VACUUM ANALYZE baton.workflow_runs');
    await pool.query('VACUUM ANALYZE baton.workflow_run_count_deltas');
    await pool.query('VACUUM ANALYZE baton.outbox');
  } finally {
    await pool.end();
  }
}

interface Row {
  path: string;
  emptyMs: number;
  fullMs: number;
  ratio: number;
  emptyStatus: number;
  fullStatus: number;
  /** Jobs (runs, messages) a listing answered on each side; null for other paths. */
  emptyItems: number | null;
  fullItems: number | null;
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const server = await openServer('cluster');
  try {
    const machine = await machineRecord(server);
    const emptyUrl = await server.createDatabase(`bench_reads_empty_${process.pid}`);
    const fullUrl = await server.createDatabase(`bench_reads_full_${process.pid}`);
    const batons = [createBaton({ connectionString: emptyUrl }), createBaton({ connectionString: fullUrl })];
    const rows: Row[] = [];
    try {
      for (const b of batons) await b.migrate();
      await recent(emptyUrl);
      await recent(fullUrl);
      await fill(fullUrl, ROWS);
      await live(emptyUrl);
      await live(fullUrl);
      const [empty, full] = batons.map((b) => createApp(b, { allowedHosts: '*', metrics: createMetrics(b, { processMetrics: false }) }));
      for (const p of PATHS) {
        // Warm-up of each.
        await timeRequest(empty!, p);
        await timeRequest(full!, p);
        const e: number[] = [];
        const f: number[] = [];
        let statuses = [0, 0];
        let items: Array<number | null> = [null, null];
        for (let i = 0; i < REQUESTS; i++) {
          const a = await timeRequest(empty!, p);
          const b = await timeRequest(full!, p);
          e.push(a.ms);
          f.push(b.ms);
          statuses = [a.status, b.status];
          items = [a.items, b.items];
        }
        const [em, fm] = [distribution(e).p50, distribution(f).p50];
        const row = {
          path: p,
          emptyMs: round(em),
          fullMs: round(fm),
          ratio: round(fm / em),
          emptyStatus: statuses[0]!,
          fullStatus: statuses[1]!,
          emptyItems: items[0]!,
          fullItems: items[1]!,
        };
        process.stderr.write(`${JSON.stringify(row)}\n`);
        rows.push(row);
      }
    } finally {
      for (const b of batons) await b.stop();
    }
    const report = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      command: `npm run bench:reads -- ${process.argv.slice(2).join(' ')}`.trim(),
      settings: { rows: ROWS, requests: REQUESTS },
      loadAvgAtEnd: os.loadavg().map((x) => Math.round(x * 100) / 100),
      machine,
      rows,
    };
    const stamp = startedAt.toISOString().slice(0, 16).replace(/[T:]/g, '-');
    await mkdir(flags.out, { recursive: true });
    const base = path.join(flags.out, `reads-${stamp}`);
    await writeFile(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
    const md = [
      `# Admin reads: no history vs ${ROWS.toLocaleString('en')} finished rows`,
      '',
      `Command: \`${report.command}\` (${report.startedAt}). Median of ${REQUESTS} in-process requests per path, after ANALYZE.`,
      `Both databases hold the same live work (1,000 pending jobs, 10 in a queue \`rare\`, 100 running workflow runs, 100 pending outbox messages) and the same 300 finished jobs, 100 finished runs and 100 published messages (written first); "full" adds the history after them (${ROWS.toLocaleString('en')} finished jobs, ${SIDE_ROWS.toLocaleString('en')} finished runs and as many published messages), so "empty" means no history, and a listing answers a page on both.`,
      `Machine: ${JSON.stringify(machine)}`,
      '',
      '| path | empty ms | full ms | full / empty | status (empty, full) | items answered (empty, full) |',
      '| --- | ---: | ---: | ---: | --- | --- |',
      ...rows.map(
        (r) =>
          `| \`${r.path}\` | ${r.emptyMs} | ${r.fullMs} | ${r.ratio}x | ${r.emptyStatus}, ${r.fullStatus} | ${r.emptyItems ?? '-'}, ${r.fullItems ?? '-'} |`,
      ),
      '',
    ].join('\n');
    await writeFile(`${base}.md`, md);
    process.stdout.write(`wrote ${base}.md and .json\n`);
  } finally {
    await server.close();
  }
}

const round = (x: number) => Math.round(x * 100) / 100;

if (import.meta.url === `file://${process.argv[1]}`) await main();
