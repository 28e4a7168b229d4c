// Summary statistics for the benchmark: percentiles of one run's samples and the
// median/min/max of a figure across repeated runs (the warm-up run never enters here).

/** Nearest-rank percentile of an ascending-sorted array (p in 0..100). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export interface Distribution {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  min: number;
  mean: number;
}

export function distribution(samples: readonly number[]): Distribution {
  const s = [...samples].sort((a, b) => a - b);
  const sum = s.reduce((a, b) => a + b, 0);
  return {
    count: s.length,
    p50: percentile(s, 50),
    p95: percentile(s, 95),
    p99: percentile(s, 99),
    max: s.length ? s[s.length - 1]! : Number.NaN,
    min: s.length ? s[0]! : Number.NaN,
    mean: s.length ? sum / s.length : Number.NaN,
  };
}

/** A figure over repeated runs: the median, with the spread shown as min/max. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  runs: number;
}

export function spread(values: readonly number[]): Spread {
  const s = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (s.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, runs: 0 };
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { median, min: s[0]!, max: s[s.length - 1]!, runs: s.length };
}

/** Monotonic host-wide clock in ms (CLOCK_MONOTONIC), comparable between processes on one host. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
