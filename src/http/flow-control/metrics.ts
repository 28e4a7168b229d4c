// Flow-control metrics, read on scrape from one flow snapshot: pending and running jobs per
// queue and tenant, running jobs and bucket tokens per concurrency key, and due jobs held
// back by a reached cap or an empty rate-limit bucket, per queue (keyed jobs per key).

import { Gauge, type Registry } from 'prom-client';
import type { Baton, FlowSnapshot } from '../../index.ts';

/** A failed read leaves the gauges empty and is reported to `onError` (the scrape still answers). */
export function registerFlowMetrics(registry: Registry, baton: Baton, onError: () => void): { settled: () => Promise<void> } {
  const registers = [registry];
  let read: Promise<FlowSnapshot | null> = Promise.resolve(null);
  const gauge = (name: string, help: string, labelNames: readonly string[], fill: (g: Gauge, s: FlowSnapshot) => void, first = false) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      async collect() {
        this.reset();
        // The first gauge starts the scrape's one read; the others wait for it.
        if (first)
          read = baton.admin.flow().catch(() => {
            onError();
            return null;
          });
        const s = await read;
        if (s) fill(this, s);
      },
    });
  gauge(
    'baton_tenant_jobs',
    'Pending and running jobs per queue and tenant (read from the database on scrape; at most 1,000 groups)',
    ['queue', 'tenant', 'state'],
    (g, s) => {
      for (const t of s.tenants) {
        g.set({ queue: t.queue, tenant: t.tenantId, state: 'pending' }, t.pending);
        g.set({ queue: t.queue, tenant: t.tenantId, state: 'running' }, t.running);
      }
    },
    true,
  );
  gauge('baton_flow_key_running', 'Running jobs per concurrency key, fleet-wide', ['key'], (g, s) => {
    for (const k of s.keys) g.set({ key: k.key }, k.running);
  });
  gauge('baton_flow_key_limit', 'Concurrency cap of a key with jobs (its most specific pattern)', ['key'], (g, s) => {
    for (const k of s.keys) if (k.concurrencyLimit !== null) g.set({ key: k.key }, k.concurrencyLimit);
  });
  gauge('baton_flow_tokens', 'Tokens in a rate-limit bucket now, per queue or key', ['scope', 'name'], (g, s) => {
    for (const q of s.queues) if (q.tokens !== null) g.set({ scope: 'queue', name: q.queue }, q.tokens);
    for (const k of s.keys) if (k.tokens !== null) g.set({ scope: 'key', name: k.key }, k.tokens);
  });
  gauge(
    'baton_flow_held_jobs',
    'Due jobs held back by a reached cap or an empty rate-limit bucket, per queue and per key',
    ['scope', 'name', 'reason'],
    (g, s) => {
      for (const h of s.held) g.set({ scope: 'queue', name: h.queue, reason: h.reason }, h.jobs);
      for (const k of s.keys) {
        if (k.due === 0) continue;
        if (k.concurrencyLimit !== null && k.running >= k.concurrencyLimit) g.set({ scope: 'key', name: k.key, reason: 'cap' }, k.due);
        else if (k.tokens !== null && k.tokens < 1) g.set({ scope: 'key', name: k.key, reason: 'rate' }, k.due);
      }
    },
  );
  return { settled: async () => void (await read) };
}
