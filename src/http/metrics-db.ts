// Gauges of the database's health, read on scrape through admin.health() (bounded queries,
// one read per HEALTH_CACHE_MS however many gauges or scrapers ask): how long due jobs wait,
// Baton's table and index sizes, dead tuples and last vacuum, and the server's oldest
// transaction horizon, which decides whether dead rows can be removed at all.

import { Gauge, type Registry } from 'prom-client';
import type { Baton, DatabaseHealth } from '../index.ts';

/**
 * Registers the health gauges on `registry`. `read` is shared by every gauge of one scrape;
 * a failed read leaves them empty and is reported to `onError` (the scrape still answers).
 */
export function registerDatabaseMetrics(registry: Registry, baton: Baton, onError: () => void): { settled: () => Promise<void> } {
  const registers = [registry];
  let last: Promise<void> = Promise.resolve();
  const read = async (fill: (h: DatabaseHealth) => void): Promise<void> => {
    const p = baton.admin.health().then(fill, () => onError());
    last = p;
    await p;
  };
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[], fill: (g: Gauge<L>, h: DatabaseHealth) => void) =>
    new Gauge<L>({
      name,
      help,
      labelNames,
      registers,
      collect() {
        this.reset();
        return read((h) => fill(this, h));
      },
    });

  gauge('baton_oldest_due_job_seconds', 'Per queue: how long the oldest due pending job has waited', ['queue'], (g, h) => {
    for (const q of h.queues) g.set({ queue: q.queue }, q.oldestDueSeconds);
  });
  gauge('baton_due_jobs', 'Per queue: pending jobs that are due now', ['queue'], (g, h) => {
    for (const q of h.queues) g.set({ queue: q.queue }, q.due);
  });
  gauge('baton_table_size_bytes', "Size of Baton's tables: the table, its indexes, and both with TOAST", ['table', 'part'], (g, h) => {
    for (const t of h.tables) {
      g.set({ table: t.name, part: 'total' }, t.totalBytes);
      g.set({ table: t.name, part: 'table' }, t.tableBytes);
      g.set({ table: t.name, part: 'indexes' }, t.indexBytes);
    }
  });
  gauge('baton_table_tuples', "Live and dead tuples of Baton's tables (the statistics' estimates)", ['table', 'kind'], (g, h) => {
    for (const t of h.tables) {
      g.set({ table: t.name, kind: 'live' }, t.liveTuples);
      g.set({ table: t.name, kind: 'dead' }, t.deadTuples);
    }
  });
  gauge(
    'baton_table_last_vacuum_timestamp_seconds',
    "When Baton's tables were last vacuumed (by hand or autovacuum), Unix time",
    ['table'],
    (g, h) => {
      for (const t of h.tables) if (t.lastVacuumAt) g.set({ table: t.name }, t.lastVacuumAt.getTime() / 1000);
    },
  );
  gauge(
    'baton_xmin_horizon_age',
    "Age in transactions of the server's oldest horizon, by source (sessions, prepared transactions, replication slots); dead rows newer than it cannot be removed",
    ['source'],
    (g, h) => {
      const sources = { sessions: h.horizon.sessionXminAge, prepared: h.horizon.preparedXminAge, slots: h.horizon.slotXminAge };
      for (const [source, age] of Object.entries(sources)) if (age !== null) g.set({ source }, age);
    },
  );
  gauge('baton_oldest_transaction_seconds', 'Age of the oldest open transaction of any client on the server', [], (g, h) => {
    if (h.horizon.oldestTransactionSeconds !== null) g.set(h.horizon.oldestTransactionSeconds);
  });
  return { settled: () => last };
}
