// Database health on /metrics: due-job waits per queue, table sizes and tuples, the
// server's horizon; read through admin.health(), which answers from one read for
// HEALTH_CACHE_MS however many gauges and scrapes ask.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { type ApiHarness, startApi } from './harness.ts';

const db = useTestDatabase();
let api: ApiHarness;

beforeAll(async () => {
  api = await startApi(db, { baton: { queues: {} } });
});
afterAll(async () => {
  await api?.close();
});

/** The value of one sample line of the exposition, or undefined. */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`) || (labels === '' && l.startsWith(`${name} `)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('database health metrics', () => {
  it('shows how long due jobs wait, the sizes of the tables and the oldest transaction', async () => {
    await insertJob(db.pool, { queue: 'waiting', runAt: { inMs: -120_000 } });
    const text = await (await api.raw('/metrics')).text();
    expect(sample(text, 'baton_oldest_due_job_seconds', 'queue="waiting"')).toBeGreaterThanOrEqual(119);
    expect(sample(text, 'baton_due_jobs', 'queue="waiting"')).toBe(1);
    expect(sample(text, 'baton_table_size_bytes', 'table="jobs",part="total"')).toBeGreaterThan(0);
    expect(sample(text, 'baton_table_tuples', 'table="jobs",kind="dead"')).toBeGreaterThanOrEqual(0);
    expect(text).toMatch(/^baton_xmin_horizon_age\{source="sessions"\} \d+/m);
    expect(sample(text, 'baton_metrics_collect_errors_total', '') ?? 0).toBe(0);
  });

  it('admin.health() answers repeated calls from one read', async () => {
    const a = await api.baton.admin.health();
    const b = await api.baton.admin.health();
    expect(b).toBe(a);
    expect(a.tables.map((t) => t.name)).toContain('jobs');
  });
});
