// Outbox metrics: messages by destination and state and the oldest pending age, read from
// the database on scrape; published, retried, dead-lettered, fenced and publish latency,
// fed from this process's relay as they happen.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Baton, RelayEvents } from '../../index.ts';

const PUBLISH_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A failed read leaves the gauges empty and is reported to `onError` (the scrape still answers). */
export function registerOutboxMetrics(
  registry: Registry,
  baton: Baton,
  onError: () => void,
): { settled: () => Promise<void>; close: () => void } {
  const registers = [registry];
  let last: Promise<void> = Promise.resolve();
  const oldest = new Gauge({
    name: 'baton_outbox_oldest_pending_age_seconds',
    help: 'Seconds since the oldest pending outbox message was recorded; 0 when none is pending (read on scrape)',
    registers: [],
    async collect() {
      await last;
    },
  });
  new Gauge({
    name: 'baton_outbox_messages',
    help: 'Outbox messages by destination and state (read from the database on scrape)',
    labelNames: ['destination', 'state'] as const,
    registers,
    collect() {
      this.reset();
      oldest.reset();
      last = baton.outbox.stats().then(
        (s) => {
          for (const d of s.destinations)
            for (const [state, n] of Object.entries(d.counts)) this.set({ destination: d.destination, state }, n);
          oldest.set(s.oldestPendingAgeSeconds ?? 0);
        },
        () => onError(),
      );
      return last;
    },
  });
  // Registered after baton_outbox_messages, whose collect starts the read this one waits for.
  registry.registerMetric(oldest);
  const published = new Counter({
    name: 'baton_outbox_published_total',
    help: 'Outbox messages acknowledged by their destination (this process)',
    labelNames: ['destination'] as const,
    registers,
  });
  const retried = new Counter({
    name: 'baton_outbox_retried_total',
    help: 'Outbox publishes that failed and will be retried (this process)',
    labelNames: ['destination'] as const,
    registers,
  });
  const dead = new Counter({
    name: 'baton_outbox_dead_lettered_total',
    help: 'Outbox messages dead-lettered, by reason (this process)',
    labelNames: ['destination', 'reason'] as const,
    registers,
  });
  const fenced = new Counter({
    name: 'baton_outbox_fenced_total',
    help: 'Outbox outcome writes that matched nothing: the claim had lapsed and the message was claimed again',
    registers,
  });
  const latency = new Histogram({
    name: 'baton_outbox_publish_seconds',
    help: 'From claim to the destination acknowledging a message (this process)',
    labelNames: ['destination'] as const,
    buckets: PUBLISH_BUCKETS_S,
    registers,
  });
  const subscriptions: Array<() => void> = [];
  const on = <K extends keyof RelayEvents>(event: K, fn: (...args: RelayEvents[K]) => void) => {
    baton.outbox.events.on(event, fn as never);
    subscriptions.push(() => baton.outbox.events.off(event, fn as never));
  };
  on('published', (e) => {
    published.inc({ destination: e.destination });
    latency.observe({ destination: e.destination }, e.latencyMs / 1000);
  });
  on('retried', (e) => retried.inc({ destination: e.destination }));
  on('deadLettered', (e) => dead.inc({ destination: e.destination, reason: e.reason }));
  on('fenced', (e) => fenced.inc(e.count));
  return {
    settled: () => last,
    close: () => {
      for (const off of subscriptions.splice(0)) off();
    },
  };
}
