// The console's chart history: a ring of stats samples the daemon keeps in memory and serves at
// GET /api/stats/history, so a page opened or reloaded now shows the last minutes, not an empty
// chart. Sampling starts with the first read of the stats or the history and stops after
// HISTORY_IDLE_MS without one: a daemon nobody watches runs no query for it. One sample at a
// time; a failed read leaves a gap, which the chart shows as one.

import type { Baton, StatsSnapshot } from '../index.ts';

export const HISTORY_INTERVAL_MS_DEFAULT = 2_000;
/** 15 minutes at the default interval. */
export const HISTORY_SAMPLES_DEFAULT = 450;
/** The window each sample's rates and latencies cover, in seconds. */
export const HISTORY_WINDOW_SECONDS = 10;
export const HISTORY_IDLE_MS = 30 * 60_000;

/** One point of the charts, read from one stats snapshot. */
export interface StatsSample {
  /** The database's clock when the snapshot was read. */
  at: Date;
  /** Jobs that succeeded, were dead-lettered, in the HISTORY_WINDOW_SECONDS before `at`. */
  succeeded: number;
  deadLettered: number;
  /** Pending and due, pending and scheduled (run-at ahead), leased or running, across queues. */
  pending: number;
  scheduled: number;
  live: number;
  /** Start latency of the window's succeeded jobs, ms; null when none. */
  p50: number | null;
  p95: number | null;
}

export interface StatsHistory {
  readonly intervalMs: number;
  readonly windowSeconds: number;
  /** Notes a reader: starts sampling when stopped (the first sample at once). */
  touch(): void;
  /** Samples newer than `since` (all when absent), oldest first. */
  samples(since?: Date): StatsSample[];
  /** Stops sampling for good. */
  close(): void;
}

export interface StatsHistoryOptions {
  intervalMs?: number;
  size?: number;
  idleMs?: number;
}

/** A sample from a snapshot. */
export function toSample(s: StatsSnapshot): StatsSample {
  let pending = 0;
  let scheduled = 0;
  let live = 0;
  for (const q of s.queues) {
    pending += q.counts.pending - q.scheduled;
    scheduled += q.scheduled;
    live += q.counts.leased + q.counts.running;
  }
  const w = s.window;
  return { at: s.at, succeeded: w.succeeded, deadLettered: w.deadLettered, pending, scheduled, live, ...latency(w.startLatencyMs) };
}

const latency = (l: { p50: number | null; p95: number | null }) => ({ p50: l.p50, p95: l.p95 });

export function createStatsHistory(baton: Baton, opts: StatsHistoryOptions = {}): StatsHistory {
  const intervalMs = opts.intervalMs ?? HISTORY_INTERVAL_MS_DEFAULT;
  const size = opts.size ?? HISTORY_SAMPLES_DEFAULT;
  const idleMs = opts.idleMs ?? HISTORY_IDLE_MS;
  const ring: StatsSample[] = [];
  let timer: NodeJS.Timeout | undefined;
  /** Whether the sampling loop runs (a read in flight or the next one scheduled). */
  let sampling = false;
  let lastRead = 0;
  let closed = false;

  const tick = async (): Promise<void> => {
    if (closed || Date.now() - lastRead > idleMs) {
      sampling = false;
      return;
    }
    try {
      ring.push(toSample(await baton.admin.stats({ windowSeconds: HISTORY_WINDOW_SECONDS })));
      if (ring.length > size) ring.splice(0, ring.length - size);
    } catch {
      // The database is away, or the engine stopping: no sample, a gap in the chart.
    }
    if (closed) {
      sampling = false;
      return;
    }
    timer = setTimeout(tick, intervalMs);
    timer.unref();
  };

  return {
    intervalMs,
    windowSeconds: HISTORY_WINDOW_SECONDS,
    touch() {
      lastRead = Date.now();
      if (closed || sampling) return;
      sampling = true;
      void tick();
    },
    samples(since) {
      if (since === undefined) return [...ring];
      const t = since.getTime();
      return ring.filter((s) => s.at.getTime() > t);
    },
    close() {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
