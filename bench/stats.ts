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

/**
 * Whether repeated runs fall into two groups rather than scatter around one value: sorted, the
 * widest step between neighbours (as a ratio) is at least `step` and leaves two runs or more on
 * each side. Such a figure's median says which group won the vote, not what the system does.
 */
export function bimodal(values: readonly number[], step = 1.3): { low: number[]; high: number[] } | null {
  const s = values.filter((v) => Number.isFinite(v) && v > 0).sort((a, b) => a - b);
  let best = -1;
  let bestRatio = 0;
  for (let i = 1; i + 2 < s.length; i++) {
    const r = s[i + 1]! / s[i]!;
    if (r > bestRatio) {
      bestRatio = r;
      best = i;
    }
  }
  if (best < 0 || bestRatio < step) return null;
  return { low: s.slice(0, best + 1), high: s.slice(best + 1) };
}

/** Monotonic host-wide clock in ms (CLOCK_MONOTONIC), comparable between processes on one host. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
