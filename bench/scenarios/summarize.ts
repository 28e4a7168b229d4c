// Turns runs into a figure: drop the warm-up, require every counted run to verify,
// then median and min/max of each value across runs.

import { spread } from '../stats.ts';
import type { Figure, RunRecord } from './context.ts';

export function summarize(base: Omit<Figure, 'status' | 'summary'>): Figure {
  const counted = base.runs.filter((r) => !r.warmup);
  const failed = counted.filter((r) => !r.ok);
  const summary: Figure['summary'] = {};
  if (failed.length === 0 && counted.length > 0) {
    const keys = new Set(counted.flatMap((r) => Object.keys(r.values)));
    for (const k of keys) summary[k] = spread(counted.map((r) => r.values[k] ?? Number.NaN));
  }
  return {
    ...base,
    status: counted.length === 0 ? 'skipped' : failed.length ? 'failed' : 'ok',
    summary,
  };
}

/** Repeats one measurement: a warm-up (unless there is only one run) plus `runs` counted ones. */
export async function repeat(
  runs: number,
  warmup: boolean,
  one: (i: number, isWarmup: boolean) => Promise<Omit<RunRecord, 'warmup'>>,
): Promise<RunRecord[]> {
  const out: RunRecord[] = [];
  const total = runs + (warmup ? 1 : 0);
  for (let i = 0; i < total; i++) {
    const isWarmup = warmup && i === 0;
    try {
      out.push({ warmup: isWarmup, ...(await one(i, isWarmup)) });
    } catch (err) {
      out.push({ warmup: isWarmup, ok: false, detail: err instanceof Error ? err.message.slice(0, 500) : String(err), values: {} });
    }
  }
  return out;
}
