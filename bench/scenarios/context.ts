// What every scenario gets from main: the server, flags, progress output, and the
// record types the report is built from.

import type { BenchArgs } from '../args.ts';
import type { Progress } from '../progress.ts';
import type { PgServer } from '../server.ts';
import type { Spread } from '../stats.ts';

export interface Ctx {
  server: PgServer;
  args: BenchArgs;
  progress: Progress;
  /** Base URL of a running Baton daemon for the HTTP variant, when there is one. */
  httpBase?: string;
  /** Extra environment of the child processes (bench:ab: BENCH_BATON_LIB, the commit under test). */
  childEnv?: Record<string, string>;
}

export interface RunRecord {
  /** The first run of each figure warms up caches/JIT and is not counted. */
  warmup: boolean;
  ok: boolean;
  /** Why a run failed (verification, error), or 'ok'. */
  detail: string;
  values: Record<string, number>;
}

export interface Figure {
  scenario: string;
  variantId: string;
  label: string;
  /** 'ok': every counted run verified; 'failed': some run did not add up (no figure shown). */
  status: 'ok' | 'failed' | 'skipped';
  note?: string;
  params: Record<string, unknown>;
  runs: RunRecord[];
  summary: Record<string, Spread>;
  /** Pooled latency samples of the counted runs as quantiles 0..100 (for the chart); null = never started. */
  quantiles?: Array<number | null>;
}

let seq = 0;
/** A database name unique to this harness invocation. */
export function dbName(tag: string): string {
  seq++;
  return `bench_${process.pid}_${seq}_${tag.replace(/[^a-z0-9]/gi, '_').toLowerCase()}`.slice(0, 60);
}

/** Runs `body` against a fresh database and always drops it. */
export async function withDatabase<T>(ctx: Ctx, tag: string, body: (url: string) => Promise<T>): Promise<T> {
  const name = dbName(tag);
  const url = await ctx.server.createDatabase(name);
  try {
    return await body(url);
  } finally {
    await ctx.server.dropDatabase(name).catch(() => undefined);
  }
}
