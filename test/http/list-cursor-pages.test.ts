// Keyset paging of the workflow-run and outbox-message listings over HTTP: every filter shape
// paged end to end by `cursor` lists exactly what one scan of the table lists, in the same
// order; a cursor beside an offset, or one that is no id, is 400. And the run listing walks its
// rows in id order instead of sorting every run: a page from the middle of 20,000 runs reads
// about what it returns.

import { beforeAll, describe, expect, it } from 'vitest';
import { workflowRunQueries } from '../../src/db/pg/queries/workflow-run.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { explainPrepared, type PlanNode, rowsVisited } from '../helpers/plan-node.ts';
import { errorCode, useApi } from './harness.ts';

const db = useTestDatabase();
const api = useApi(db);
const RUNS = 20_000;
const MESSAGES = 600;
const PAGE = 37;

beforeAll(async () => {
  // Rows written directly: the listings read the tables, whoever wrote them. A run without a
  // driving job reads as its own state.
  await db.query(
    `INSERT INTO baton.workflow_runs (name, tenant_id, state, finished_at)
     SELECT CASE WHEN g % 3 = 0 THEN 'a' ELSE 'b' END, CASE WHEN g % 5 = 0 THEN 'acme' ELSE 'default' END,
       CASE WHEN g % 50 = 0 THEN 'cancelled' WHEN g % 7 = 0 THEN 'running' ELSE 'succeeded' END,
       CASE WHEN g % 7 = 0 AND g % 50 <> 0 THEN NULL ELSE now() END
     FROM generate_series(1, $1::int) g`,
    [RUNS],
  );
  // Live runs whose driving job was dead-lettered or cancelled read as the job's state; those
  // whose job is pending, as their own.
  await db.query(
    `WITH j AS (
       INSERT INTO baton.jobs (queue, job_type, state, finished_at, dead_letter_reason)
       SELECT 'wf', 'workflow:a', s, CASE WHEN s = 'pending' THEN NULL ELSE now() END,
         CASE WHEN s = 'dead_lettered' THEN 'attempts_exhausted' END
       FROM unnest(ARRAY['dead_lettered', 'cancelled', 'pending']) s RETURNING id, state)
     INSERT INTO baton.workflow_runs (name, state, job_id)
     SELECT 'a', CASE WHEN g % 2 = 0 THEN 'running' ELSE 'sleeping' END, j.id FROM j, generate_series(1, 90) g`,
  );
  await db.query(
    `INSERT INTO baton.outbox (tenant_id, destination, topic, message_key, max_attempts, state, finished_at, dead_letter_reason)
     SELECT CASE WHEN g % 4 = 0 THEN 'acme' ELSE 'default' END, CASE WHEN g % 3 = 0 THEN 'hooks' ELSE 'nats' END, 't', 'k' || g, 5,
       s.state, CASE WHEN s.state = 'pending' THEN NULL ELSE now() END,
       CASE WHEN s.state = 'dead_lettered' THEN 'attempts_exhausted' END
     FROM generate_series(1, $1::int) g,
       LATERAL (SELECT CASE WHEN g % 10 = 0 THEN 'dead_lettered' WHEN g % 2 = 0 THEN 'published' ELSE 'pending' END AS state) s`,
    [MESSAGES],
  );
  await db.query('ANALYZE baton.workflow_runs');
  await db.query('ANALYZE baton.outbox');
});

interface Page {
  nextCursor: string | null;
  [items: string]: unknown;
}

/** Every item of a listing, page by page through nextCursor; fails on a non-200 page. */
async function pageThrough(path: string, items: 'runs' | 'messages', filter: Record<string, string>): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 10_000; pages++) {
    const q = new URLSearchParams({ ...filter, limit: String(PAGE), ...(cursor ? { cursor } : {}) });
    const res = await api.raw(`${path}?${q}`);
    expect(res.status).toBe(200);
    const page = (await res.json()) as Page;
    const got = (page[items] as Array<{ id: string }>).map((x) => x.id);
    ids.push(...got);
    // A short page is the last; a full one names its last item.
    expect(page.nextCursor).toBe(got.length === PAGE ? got.at(-1) : null);
    if (page.nextCursor === null) return ids;
    cursor = page.nextCursor;
  }
  throw new Error('the listing did not end');
}

async function scan(table: string, where: string, params: unknown[]): Promise<string[]> {
  const from = table.startsWith('(') ? table : `baton.${table}`;
  const r = await db.query<{ id: string }>(`SELECT t.id::text AS id FROM ${from} t WHERE ${where} ORDER BY t.id DESC`, params);
  return r.rows.map((x) => x.id);
}

/** The runs as a reader sees their states (a live run whose job dead-lettered or was cancelled takes the job's). */
const READER_RUNS = `(SELECT r.id, r.name, r.tenant_id,
    CASE WHEN r.state IN ('running', 'sleeping', 'waiting') AND j.state IN ('dead_lettered', 'cancelled') THEN j.state ELSE r.state END AS state
  FROM baton.workflow_runs r LEFT JOIN baton.jobs j ON j.id = r.job_id)`;

describe('GET /api/workflows/runs by cursor', () => {
  it.each([
    [{}, 'true', []],
    [{ name: 'a' }, 'name = $1', ['a']],
    [{ state: 'cancelled' }, 'state = $1', ['cancelled']],
    [{ tenantId: 'acme' }, 'tenant_id = $1', ['acme']],
    [{ name: 'b', state: 'running' }, 'name = $1 AND state = $2', ['b', 'running']],
    [{ state: 'running' }, 'state = $1', ['running']],
    [{ state: 'sleeping' }, 'state = $1', ['sleeping']],
    [{ state: 'dead_lettered' }, 'state = $1', ['dead_lettered']],
    [{ state: 'succeeded', name: 'a' }, 'state = $1 AND name = $2', ['succeeded', 'a']],
  ] as Array<[Record<string, string>, string, unknown[]]>)('%j lists what one scan lists, in order', async (filter, where, params) => {
    const expected = await scan(READER_RUNS, where, params);
    expect(expected.length).toBeGreaterThan(PAGE);
    expect(await pageThrough('/api/workflows/runs', 'runs', filter)).toEqual(expected);
  });
});

describe('GET /api/outbox/messages by cursor', () => {
  it.each([
    [{}, 'true', []],
    [{ state: 'published' }, 'state = $1', ['published']],
    [{ destination: 'hooks' }, 'destination = $1', ['hooks']],
    [{ tenantId: 'acme', state: 'published' }, 'tenant_id = $1 AND state = $2', ['acme', 'published']],
  ] as Array<[Record<string, string>, string, unknown[]]>)('%j lists what one scan lists, in order', async (filter, where, params) => {
    const expected = await scan('outbox', where, params);
    expect(expected.length).toBeGreaterThan(PAGE);
    expect(await pageThrough('/api/outbox/messages', 'messages', filter)).toEqual(expected);
  });
});

describe('bad cursors', () => {
  it.each(['/api/workflows/runs', '/api/outbox/messages'])('%s: 400 for a cursor beside an offset, or one that is no id', async (path) => {
    for (const q of ['cursor=5&offset=10', 'cursor=x', 'cursor=0', 'cursor=99999999999999999999']) {
      const res = await api.raw(`${path}?${q}`);
      expect(res.status, q).toBe(400);
      expect(await errorCode(res), q).toBe('INVALID_ARGUMENT');
    }
    // A cursor beside offset=0 is a first page's cursor as any other.
    expect((await api.raw(`${path}?cursor=5&offset=0`)).status).toBe(200);
  });
});

describe('the run listing reads about what it returns', () => {
  const list = workflowRunQueries(quoteSchema('baton')).list;
  const middle = String(RUNS / 2);
  const plan = (args: string[]) => explainPrepared(db.pool, list.text, args, 'force_custom_plan');
  const sorts = (n: PlanNode): number => (n['Node Type'] === 'Sort' ? 1 : 0) + (n.Plans ?? []).reduce((s, c) => s + sorts(c), 0);

  it.each([
    ['every run, first page', ['NULL', 'NULL', 'NULL', '20', '0', 'NULL']],
    ['every run, from the middle', ['NULL', 'NULL', 'NULL', '20', '0', middle]],
    ['one name, from the middle', ["'a'", 'NULL', 'NULL', '20', '0', middle]],
    ['succeeded, from the middle', ['NULL', "'succeeded'", 'NULL', '20', '0', middle]],
    ['running, from the middle', ['NULL', "'running'", 'NULL', '20', '0', middle]],
  ])('%s: no sort, and a few dozen rows visited', async (_, args) => {
    const p = await plan(args);
    expect(sorts(p)).toBe(0);
    expect(p['Actual Rows']).toBe(20);
    // 20 runs, their 20 (absent) driving jobs, and the runs of other names or states walked past.
    expect(rowsVisited(p)).toBeLessThanOrEqual(200);
  });
});
