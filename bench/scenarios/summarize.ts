// Turns runs into a figure: drop the warm-up, require every counted run to verify,
// then median and min/max of each value across runs; and the two ways runs are ordered.

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

type RunBody = (i: number, isWarmup: boolean) => Promise<Omit<RunRecord, 'warmup'>>;

/** One figure still to be measured: how to do one run, and how its runs become the figure. */
export interface Measurement {
  run: RunBody;
  figure: (runs: RunRecord[]) => Figure;
}

async function once(run: RunBody, i: number, isWarmup: boolean): Promise<RunRecord> {
  try {
    return { warmup: isWarmup, ...(await run(i, isWarmup)) };
  } catch (err) {
    return { warmup: isWarmup, ok: false, detail: err instanceof Error ? err.message.slice(0, 500) : String(err), values: {} };
  }
}

/** Repeats one measurement: a warm-up (unless there is only one run) plus `runs` counted ones. */
export async function repeat(runs: number, warmup: boolean, one: RunBody): Promise<RunRecord[]> {
  const out: RunRecord[] = [];
  const total = runs + (warmup ? 1 : 0);
  for (let i = 0; i < total; i++) out.push(await once(one, i, warmup && i === 0));
  return out;
}

/**
 * Measures figures that are compared with each other in rounds: each round runs every
 * measurement once, one at a time, in the opposite order to the round before. A shared
 * machine's speed drifts over minutes; measured back to back, one system would take all of
 * a drift and the ratio with it. Interleaved, a drift lands on every system of a round alike,
 * and run i of every figure comes from round i, so runs can be compared pairwise.
 */
export async function interleaved(runs: number, warmup: boolean, measurements: Measurement[]): Promise<Figure[]> {
  const records = measurements.map((): RunRecord[] => []);
  const total = runs + (warmup ? 1 : 0);
  for (let round = 0; round < total; round++) {
    const order = measurements.map((_, k) => k);
    if (round % 2 === 1) order.reverse();
    for (const k of order) records[k]!.push(await once(measurements[k]!.run, round, warmup && round === 0));
  }
  return measurements.map((m, k) => m.figure(records[k]!));
}
