// The workers table as the engine and the admin API use it: the liveness sweep, the leader's
// prune (fenced by its epoch in SQL), each worker's touch, and the fleet's listings.

import type { WorkerRow } from '../../driver/executor.ts';
import type { ExecutorStatements } from './executor-statements.ts';
import { queryRows } from './query-rows.ts';

type WorkerDb = Pick<ExecutorStatements, 'pool' | 'worker'>;

export async function sweep(db: WorkerDb, p: { lockNamespace: number }) {
  await queryRows(db.pool, db.worker.sweep, [p.lockNamespace]);
}

export async function prune(db: WorkerDb, p: { epoch: string }) {
  await queryRows(db.pool, db.worker.prune, [p.epoch]);
}

export async function touch(db: WorkerDb, p: { id: string; inFlight: number }) {
  await queryRows(db.pool, db.worker.touch, [p.id, p.inFlight]);
}

export async function listLive(db: WorkerDb): Promise<Array<{ queues: string[]; jobTypes: string[] }>> {
  const rows = await queryRows<{ queues: Record<string, number>; job_types: string[] }>(db.pool, db.worker.listLive, []);
  return rows.map((r) => ({ queues: Object.keys(r.queues ?? {}), jobTypes: r.job_types }));
}

export async function list(db: WorkerDb): Promise<WorkerRow[]> {
  const rows = await queryRows<{
    id: string;
    hostname: string;
    pid: number;
    queues: Record<string, number>;
    job_types: string[];
    in_flight: number;
    started_at: Date;
    last_seen_at: Date;
    alive: boolean;
    leader: boolean;
  }>(db.pool, db.worker.list, []);
  return rows.map((r) => ({
    id: r.id,
    hostname: r.hostname,
    pid: r.pid,
    queues: r.queues,
    jobTypes: r.job_types,
    inFlight: r.in_flight,
    startedAt: r.started_at,
    lastSeenAt: r.last_seen_at,
    alive: r.alive,
    leader: r.leader,
  }));
}
