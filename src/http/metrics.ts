// Prometheus metrics on a registry of their own. Counters and histograms are fed
// from baton.events as they happen; job counts by state and slot gauges are read
// on scrape (admin.queues(), stats()), so they are never stale and cost nothing between scrapes.

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { Baton, EngineEvents } from '../index.ts';
import type { AuthFailureReason } from './auth.ts';
import { registerFlowMetrics } from './flow-control/metrics.ts';
import { registerAuthMetrics } from './metrics-auth.ts';
import { registerDatabaseMetrics } from './metrics-db.ts';
import { registerOutboxMetrics } from './outbox/metrics.ts';
import { registerWorkflowMetrics } from './workflows/metrics.ts';

export interface MetricsOptions {
  /** Also export Node process metrics (heap, event loop lag, ...). Default true. */
  processMetrics?: boolean;
}

export interface Metrics {
  readonly registry: Registry;
  /** Prometheus text exposition of every metric. */
  render(): Promise<string>;
  readonly contentType: string;
  /** Called by the request middleware for each response. */
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  /** Called by auth.ts for each request refused 401. */
  observeAuthFailure(reason: AuthFailureReason): void;
  /** Detaches from baton.events. Idempotent. */
  close(): void;
}

/** Latency buckets in seconds, 1 ms .. 10 s: start latency is expected in the low milliseconds. */
const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const DURATION_BUCKETS_S = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];

export function createMetrics(baton: Baton, opts: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  const worker = baton.config.workerId;
  if (opts.processMetrics ?? true) collectDefaultMetrics({ register: registry });

  // The scrape currently reading job counts; the error counter waits for it (prom-client reads all metrics concurrently).
  let jobsRead: Promise<void> = Promise.resolve();
  // Whether a read of this scrape failed: baton_jobs is collected first and starts a scrape afresh.
  let scrapeFailed = false;
  // Filled by baton_jobs's read (the same admin.queues() answer), so both show one moment.
  const paused = new Gauge({
    name: 'baton_queue_paused',
    help: 'Whether the queue is paused (1): no worker process claims from it (read from the database on scrape)',
    labelNames: ['queue'] as const,
    registers: [],
    async collect() {
      await jobsRead;
    },
  });
  new Gauge({
    name: 'baton_jobs',
    help: 'Jobs by queue and state (read from the database on scrape)',
    labelNames: ['queue', 'state'] as const,
    registers,
    collect() {
      this.reset();
      paused.reset();
      scrapeFailed = false;
      jobsRead = (async () => {
        try {
          for (const { queue, counts, paused: p } of await baton.admin.queues()) {
            for (const [state, n] of Object.entries(counts)) this.set({ queue, state }, n);
            paused.set({ queue }, p ? 1 : 0);
          }
        } catch {
          // A scrape must still answer while the database is down; the error counter says why it is empty.
          scrapeFailed = true;
        }
      })();
      return jobsRead;
    },
  });
  // Registered after baton_jobs, whose collect starts the read this one waits for.
  registry.registerMetric(paused);
  const health = registerDatabaseMetrics(registry, baton, () => {
    scrapeFailed = true;
  });
  const workflows = registerWorkflowMetrics(registry, baton, () => {
    scrapeFailed = true;
  });
  const flow = registerFlowMetrics(registry, baton, () => {
    scrapeFailed = true;
  });
  const outbox = registerOutboxMetrics(registry, baton, () => {
    scrapeFailed = true;
  });
  new Counter({
    name: 'baton_metrics_collect_errors_total',
    help: 'Scrapes whose job counts or database health could not be read from the database',
    registers,
    // Reports the failure of this very scrape, not only of earlier ones: once, whatever failed.
    async collect() {
      await Promise.all([jobsRead, health.settled(), workflows.settled(), flow.settled(), outbox.settled()]);
      if (scrapeFailed) this.inc();
    },
  });
  const slotLabels = ['worker', 'queue'] as const;
  const inFlight = new Gauge({ name: 'baton_slots_in_flight', help: 'Jobs in flight on this worker', labelNames: slotLabels, registers });
  const free = new Gauge({ name: 'baton_slots_free', help: 'Free slots on this worker', labelNames: slotLabels, registers });
  new Gauge({
    name: 'baton_slots_concurrency',
    help: 'Configured slots on this worker',
    labelNames: slotLabels,
    registers,
    collect() {
      this.reset();
      inFlight.reset();
      free.reset();
      for (const [queue, s] of Object.entries(baton.stats().slots)) {
        this.set({ worker, queue }, s.concurrency);
        inFlight.set({ worker, queue }, s.inFlight);
        free.set({ worker, queue }, Math.max(0, s.concurrency - s.inFlight));
      }
    },
  });

  new Gauge({
    name: 'baton_presence_held',
    help: 'Whether this worker holds its presence lock (1); it claims nothing while it does not (0)',
    labelNames: ['worker'] as const,
    registers,
    collect() {
      this.reset();
      const held = baton.stats().presenceHeld;
      if (held !== null) this.set({ worker }, held ? 1 : 0);
    },
  });

  new Gauge({
    name: 'baton_leader',
    help: 'Whether this process holds the leader lease and acts on it (1) or not (0): the leader runs cron, retention and pruning',
    labelNames: ['worker'] as const,
    registers,
    collect() {
      this.reset();
      const leader = baton.stats().leader;
      if (leader !== null) this.set({ worker }, leader ? 1 : 0);
    },
  });

  // Cron counters live in the engine (stats().cron) and are read on scrape.
  new Counter({
    name: 'baton_cron_occurrences_fired_total',
    help: 'Schedule occurrences this process turned into jobs',
    registers,
    collect() {
      this.reset();
      this.inc(baton.stats().cron.fired);
    },
  });
  new Counter({
    name: 'baton_cron_misfires_total',
    help: 'Catch-ups: times a schedule was found with occurrences missed while nothing ticked, by its misfire policy',
    labelNames: ['policy'] as const,
    registers,
    collect() {
      this.reset();
      for (const [policy, n] of Object.entries(baton.stats().cron.misfires)) this.inc({ policy }, n);
    },
  });
  new Counter({
    name: 'baton_cron_schedules_disabled_total',
    help: 'Schedules this process disabled because it could not evaluate or enqueue them',
    registers,
    collect() {
      this.reset();
      this.inc(baton.stats().cron.disabled);
    },
  });

  const q = ['queue'] as const;
  const enqueued = new Counter({ name: 'baton_jobs_enqueued_total', help: 'Jobs enqueued by this process', labelNames: q, registers });
  const claimed = new Counter({ name: 'baton_jobs_claimed_total', help: 'Jobs claimed by this worker', labelNames: q, registers });
  const succeeded = new Counter({ name: 'baton_jobs_succeeded_total', help: 'Jobs completed successfully', labelNames: q, registers });
  const retried = new Counter({ name: 'baton_jobs_retried_total', help: 'Failed attempts scheduled for retry', labelNames: q, registers });
  const deadLettered = new Counter({
    name: 'baton_jobs_dead_lettered_total',
    help: 'Jobs moved to the dead-letter queue',
    labelNames: q,
    registers,
  });
  const cancelled = new Counter({
    name: 'baton_jobs_cancelled_total',
    help: 'Jobs this worker ran that ended cancelled (their attempt stopped after a cancel request)',
    labelNames: q,
    registers,
  });
  const cancelSignalled = new Counter({
    name: 'baton_cancel_signals_total',
    help: 'Handler signals this worker aborted for a cancel request, by how it learned of it',
    labelNames: ['via'] as const,
    registers,
  });
  const leasesLost = new Counter({
    name: 'baton_leases_lost_total',
    help: 'Leases this worker lost while running a job',
    labelNames: q,
    registers,
  });
  const fenced = new Counter({
    name: 'baton_fenced_writes_total',
    help: 'Writes refused because the lease token was stale',
    labelNames: ['kind'] as const,
    registers,
  });
  const reaped = new Counter({
    name: 'baton_jobs_reaped_total',
    help: 'Expired or orphaned leases reclaimed by the reaper',
    labelNames: ['fast'] as const,
    registers,
  });
  const purged = new Counter({
    name: 'baton_jobs_purged_total',
    help: 'Finished jobs deleted by retention, by state',
    labelNames: ['queue', 'state'] as const,
    registers,
  });
  const enqueueWarnings = new Counter({
    name: 'baton_enqueue_warnings_total',
    help: 'Jobs enqueued that no live worker could run yet (no worker of the queue, or no handler for the job type)',
    labelNames: ['code', 'queue'] as const,
    registers,
  });
  const released = new Counter({
    name: 'baton_jobs_released_total',
    help: 'Leases given back with the attempt refunded (stranded: claim reply lost; late: claim answered past the heartbeat deadline; shutdown: stop or drain deadline)',
    labelNames: ['queue', 'reason'] as const,
    registers,
  });
  const engineErrors = new Counter({
    name: 'baton_engine_errors_total',
    help: 'Errors the engine reported on its error event',
    labelNames: ['where'] as const,
    registers,
  });
  const claimDuration = new Histogram({
    name: 'baton_claim_duration_seconds',
    help: 'Duration of one claim statement',
    labelNames: q,
    buckets: LATENCY_BUCKETS_S,
    registers,
  });
  const startLatency = new Histogram({
    name: 'baton_job_start_latency_seconds',
    help: 'Time from a job being due (enqueue commit or run_at) to its handler starting',
    labelNames: q,
    buckets: LATENCY_BUCKETS_S,
    registers,
  });
  const jobDuration = new Histogram({
    name: 'baton_job_duration_seconds',
    help: 'Handler run time of succeeded jobs',
    labelNames: q,
    buckets: DURATION_BUCKETS_S,
    registers,
  });
  const httpRequests = new Counter({
    name: 'baton_http_requests_total',
    help: 'HTTP requests by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  });
  const httpDuration = new Histogram({
    name: 'baton_http_request_duration_seconds',
    help: 'HTTP request duration by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers,
  });

  const subscriptions: Array<() => void> = [];
  const on = <K extends keyof EngineEvents>(event: K, fn: (...args: EngineEvents[K]) => void): void => {
    baton.events.on(event, fn as never);
    subscriptions.push(() => baton.events.off(event, fn as never));
  };
  on('enqueued', (e) => enqueued.inc({ queue: e.queue }, e.count));
  on('claimed', (e) => {
    claimed.inc({ queue: e.queue }, e.count);
    claimDuration.observe({ queue: e.queue }, e.durationMs / 1000);
  });
  on('started', (e) => startLatency.observe({ queue: e.job.queue }, Math.max(0, e.startLatencyMs) / 1000));
  on('succeeded', (e) => {
    succeeded.inc({ queue: e.job.queue });
    jobDuration.observe({ queue: e.job.queue }, e.durationMs / 1000);
  });
  on('retried', (e) => retried.inc({ queue: e.job.queue }));
  on('deadLettered', (e) => deadLettered.inc({ queue: e.job.queue }));
  on('fenced', (e) => fenced.inc({ kind: e.kind }, e.count));
  on('leaseLost', (e) => leasesLost.inc({ queue: e.job.queue }));
  on('cancelled', (e) => cancelled.inc({ queue: e.job.queue }));
  on('cancelSignalled', (e) => cancelSignalled.inc({ via: e.via }));
  on('reaped', (e) => reaped.inc({ fast: String(e.fast) }, e.count));
  on('released', (e) => released.inc({ queue: e.queue, reason: e.reason }, e.count));
  on('purged', (e) => purged.inc({ queue: e.queue, state: e.state }, e.count));
  on('enqueueWarning', (e) => enqueueWarnings.inc({ code: e.code, queue: e.queue }, e.count));
  // Listening here also keeps an engine 'error' event from being thrown as unhandled.
  on('error', (e) => engineErrors.inc({ where: e.where }));
  let closed = false;
  const authFailures = registerAuthMetrics(registry);

  return {
    registry,
    contentType: registry.contentType,
    render: () => registry.metrics(),
    observeRequest(method, route, status, seconds) {
      httpRequests.inc({ method, route, status: String(status) });
      httpDuration.observe({ method, route }, seconds);
    },
    observeAuthFailure: (reason) => authFailures.inc({ reason }),
    close() {
      if (closed) return;
      closed = true;
      for (const unsubscribe of subscriptions) unsubscribe();
      outbox.close();
    },
  };
}
