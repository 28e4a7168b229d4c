// The NOTIFY channels the engine and the database talk over: one per queue (wake-ups), one for
// cancel requests, one for schedule changes. Fixed-length hex names, safe to LISTEN on unquoted.

import { createHash } from 'node:crypto';

/** The NOTIFY channel of a queue: a fixed-length hex identifier, safe to LISTEN on unquoted. */
export function channelFor(schema: string, queue: string): string {
  return `baton_${createHash('sha1').update(`${schema}\u0000${queue}`).digest('hex').slice(0, 24)}`;
}

/**
 * The NOTIFY channel of cancel requests for running jobs of `schema`: its payload is
 * `<job id>:<lease token>`, so only the holder of that very lease aborts its handler.
 */
export function cancelChannelFor(schema: string): string {
  return `baton_cancel_${createHash('sha1').update(schema).digest('hex').slice(0, 24)}`;
}

/** The NOTIFY channel that tells tickers a schedule of `schema` changed. */
export function cronChannelFor(schema: string): string {
  return `baton_cron_${createHash('sha1').update(schema).digest('hex').slice(0, 24)}`;
}
