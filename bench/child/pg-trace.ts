// Diagnostics for bench/latency-breakdown.ts: timestamps, in this process, of every
// notification that reaches a pg client and of every claim sent and answered. It
// patches pg's Client prototype, so it sees every system's connections: the peers share the
// bench's pg package, and Baton's own copy (the repository's, or the build under test's) is
// patched too. A claim is any statement with SKIP LOCKED, so Baton's reaper sweep (every
// 250 ms) counts too: it rarely falls inside a job's stages.

import { createRequire } from 'node:module';
import pg from 'pg';
import { nowMs } from '../stats.ts';

export type TraceKind = 'notification' | 'claim-sent' | 'claim-reply';
export type TraceEvent = [TraceKind, number];

type Query = (this: pg.Client, ...args: unknown[]) => unknown;

function statementText(config: unknown): string {
  if (typeof config === 'string') return config;
  const text = (config as { text?: unknown } | null)?.text;
  return typeof text === 'string' ? text : '';
}

/** Starts recording in every pg client of this process; returns a function that reads the events so far. */
export function startPgTrace(): () => TraceEvent[] {
  const events: TraceEvent[] = [];
  // The pg Baton loads: the one beside the build under test (bench:ab) or the repository's.
  const batonEntry = process.env.BENCH_BATON_LIB ?? new URL('../../src/index.ts', import.meta.url).pathname;
  const batonPg = createRequire(batonEntry)('pg') as typeof pg;
  for (const Client of new Set([pg.Client, batonPg.Client])) patch(Client.prototype as unknown as Patchable, events);
  return () => events;
}

type Patchable = { emit: pg.Client['emit']; query: Query };

function patch(proto: Patchable, events: TraceEvent[]): void {
  const emit = proto.emit;
  proto.emit = function (this: pg.Client, name: string | symbol, ...args: unknown[]) {
    if (name === 'notification') events.push(['notification', nowMs()]);
    return emit.call(this, name, ...args);
  } as pg.Client['emit'];
  const query = proto.query;
  proto.query = function (this: pg.Client, ...args: unknown[]) {
    if (!/skip\s+locked/i.test(statementText(args[0]))) return query.apply(this, args);
    events.push(['claim-sent', nowMs()]);
    const replied = () => events.push(['claim-reply', nowMs()]);
    const cb = args.findIndex((a) => typeof a === 'function');
    if (cb >= 0) {
      const done = args[cb] as (...r: unknown[]) => unknown;
      args[cb] = function (this: unknown, ...r: unknown[]) {
        replied();
        return done.apply(this, r);
      };
      return query.apply(this, args);
    }
    const result = query.apply(this, args);
    if (result instanceof Promise) result.then(replied, () => undefined);
    return result;
  };
}
