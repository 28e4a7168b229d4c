// Reads the leader lease's statements and the leader-only writes off the wire for the chaos
// history (by their statement names): which kind, the epoch carried, and whether it took or
// changed anything. Pure; test/chaos/worker.ts does the wrapping and the logging.

import type pg from 'pg';
import type { LeaderWriteRecord } from './history.ts';

type Kind = LeaderWriteRecord['kind'];

/** Statement name suffix -> kind, and where the epoch is: a parameter index, or the answer (acquire). */
const KINDS: Array<[suffix: string, kind: Kind, epochParam: number | null]> = [
  ['.leader_acquire', 'acquire', null],
  ['.leader_renew', 'renew', 2],
  ['.leader_fence_tx', 'fence', 0],
  ['.job_purge_scan', 'job-purge', 5],
  ['.outbox_purge', 'outbox-purge', 3],
  ['.worker_prune', 'worker-prune', 0],
];

export function leaderKind(config: unknown): Kind | undefined {
  const name = (config as { name?: unknown } | null | undefined)?.name;
  if (typeof name !== 'string') return undefined;
  return KINDS.find(([suffix]) => name.endsWith(suffix))?.[1];
}

export function leaderRecord(
  kind: Kind,
  config: { values?: unknown[] },
  res: pg.QueryResult | undefined,
  err: unknown,
  meta: { worker: string; sentAt: number; at: number },
): LeaderWriteRecord {
  const param = KINDS.find(([, k]) => k === kind)?.[2] ?? null;
  const rows = (res?.rows ?? []) as Array<Record<string, unknown>>;
  const epoch = param === null ? ((rows[0]?.epoch as string | undefined) ?? null) : String(config.values?.[param] ?? '');
  let changed: boolean | null = null;
  if (res) {
    if (kind === 'fence') changed = rows[0]?.held === true;
    else if (kind === 'job-purge') changed = rows.some((r) => Array.isArray(r.deleted) && r.deleted.length > 0);
    else if (kind === 'acquire' || kind === 'renew') changed = rows.length === 1;
    else changed = (res.rowCount ?? 0) > 0;
  }
  return {
    type: 'leader-write',
    kind,
    worker: meta.worker,
    epoch,
    changed,
    sentAt: meta.sentAt,
    at: meta.at,
    ...(err ? { error: String((err as Error).message ?? err).slice(0, 200) } : {}),
  };
}
