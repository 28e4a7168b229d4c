// Reads the engine's lease writes off the wire for the chaos history: which statement
// it is (by its text: the writes are unnamed, or named by batch size), which leases it
// carried, and which of them it wrote. Pure, so test/db/write-recorder.test.ts can hold it to the executor's
// real statements; test/chaos/worker.ts does the wrapping and the logging.

import type pg from 'pg';
import { jobQueries } from '../../src/db/pg/queries/job.ts';
import { SIZE_IN_TEXT_MAX } from '../../src/db/pg/queries/job-fragments.ts';
import { quoteSchema } from '../../src/driver/schema-name.ts';
import type { WriteRecord } from './history.ts';

const jobQ = jobQueries(quoteSchema('baton'));
/** Every text of a statement sent by batch size (bySize): the open one and one per size. */
const everySize = (q: ((n: number) => { text: string }) & { open: { text: string } }) => [
  q.open.text,
  ...Array.from({ length: SIZE_IN_TEXT_MAX }, (_, i) => q(i + 1).text),
];
const WRITES = new Map<string, WriteRecord['kind']>([
  ...[...everySize(jobQ.completeMany), ...everySize(jobQ.completeManyBlocksKnown)].map((t) => [t, 'complete'] as const),
  [jobQ.failMany.text, 'fail'],
  [jobQ.heartbeatMany.text, 'heartbeat'],
  [jobQ.markRunningMany.text, 'start'],
  [jobQ.releaseMany.text, 'release'],
]);

export function writeKind(config: unknown): WriteRecord['kind'] | undefined {
  if (!config || typeof config !== 'object') return undefined;
  const text = (config as { text?: unknown }).text;
  return typeof text === 'string' ? WRITES.get(text) : undefined;
}

/** A bigint[] parameter: an array, or the literal the executor builds ('{1,2,3}'). */
function bigints(v: unknown): string[] {
  if (Array.isArray(v)) return v.map(String);
  if (typeof v === 'string' && v.length > 2) return v.slice(1, -1).split(',');
  return [];
}

/** The ids a write reports as written: one row per id (fail), or one `ids` row, NULL meaning all of them. */
function writtenIds(res: pg.QueryResult, ids: string[]): Set<string> {
  const first = res.rows[0] as { ids?: unknown } | undefined;
  if (res.rows.length === 1 && first && 'ids' in first) return new Set(first.ids === null ? ids : bigints(first.ids));
  return new Set(res.rows.map((r: { id: unknown }) => String(r.id)));
}

/** One record per lease the write carried: rowsAffected 1 written, 0 fenced off, null on error. */
export function writeRecords(
  kind: WriteRecord['kind'],
  config: { values?: unknown[] },
  res: pg.QueryResult | undefined,
  err: unknown,
  meta: { worker: string; sentAt: number; at: number },
): WriteRecord[] {
  const ids = bigints(config.values?.[0]);
  const tokens = bigints(config.values?.[1]);
  const ok = res ? writtenIds(res, ids) : undefined;
  return ids.map((id, i) => ({
    type: 'write',
    kind,
    jobId: String(id),
    token: String(tokens[i]),
    worker: meta.worker,
    rowsAffected: ok ? (ok.has(String(id)) ? 1 : 0) : null,
    sentAt: meta.sentAt,
    at: meta.at,
    ...(err ? { error: String((err as Error).message ?? err) } : {}),
  }));
}
