// The database's health as the admin API shows it (due backlog, table sizes and vacuum, the
// server's xmin horizon) and the manual VACUUM of the jobs table. All reads of live work or the
// catalogs, but the VACUUM, which has a session of its own.

import type { DatabaseHealth } from '../../types/admin.ts';
import type { ExecutorStatements } from './executor-statements.ts';
import { checkOut } from './pool.ts';
import { UnnamedStatementClient } from './pooler-client.ts';
import { queryRows } from './query-rows.ts';

type HealthDb = Pick<ExecutorStatements, 'pool' | 'health'>;

export async function jobDeadTuples(db: HealthDb) {
  const [r] = await queryRows<{ dead: number; vacuuming: boolean }>(db.pool, db.health.jobsDead, []);
  return r ?? { dead: 0, vacuuming: false };
}

export async function jobVacuum(db: HealthDb) {
  // VACUUM runs outside a transaction block, so the session's timeout is lifted around it;
  // through a transaction pooler the three statements may reach three server sessions, so
  // there it runs under the role's timeout (docs/scaling.md).
  const out = await checkOut(db.pool);
  const ownSession = !(out.client instanceof UnnamedStatementClient);
  let ok = false;
  try {
    if (ownSession) await queryRows(out.client, { text: 'SET statement_timeout = 0' }, []);
    await queryRows(out.client, db.health.vacuumJobs, []);
    if (ownSession) await queryRows(out.client, { text: 'RESET statement_timeout' }, []);
    ok = true;
  } finally {
    // A session left without its timeout is not handed back.
    out.release(!ok);
  }
}

export async function oldestDue(db: HealthDb): Promise<DatabaseHealth['queues']> {
  const rows = await queryRows<{ queue: string; seconds: number; due: number }>(db.pool, db.health.oldestDue, []);
  return rows.map((r) => ({ queue: r.queue, oldestDueSeconds: Math.max(0, r.seconds), due: r.due }));
}

export async function tableStats(db: HealthDb & Pick<ExecutorStatements, 'schemaName'>): Promise<DatabaseHealth['tables']> {
  const rows = await queryRows<{
    name: string;
    total_bytes: number;
    table_bytes: number;
    index_bytes: number;
    live_tuples: number;
    dead_tuples: number;
    last_vacuum_epoch: number | null;
    last_analyze_epoch: number | null;
  }>(db.pool, db.health.tables, [db.schemaName]);
  const at = (epoch: number | null) => (epoch === null ? null : new Date(epoch * 1000));
  return rows.map((r) => ({
    name: r.name,
    totalBytes: r.total_bytes,
    tableBytes: r.table_bytes,
    indexBytes: r.index_bytes,
    liveTuples: r.live_tuples,
    deadTuples: r.dead_tuples,
    lastVacuumAt: at(r.last_vacuum_epoch),
    lastAnalyzeAt: at(r.last_analyze_epoch),
  }));
}

export async function serverHorizon(db: HealthDb): Promise<DatabaseHealth['horizon']> {
  const [r] = await queryRows<{
    session_xmin_age: number | null;
    oldest_xact_seconds: number | null;
    prepared_xmin_age: number | null;
    slot_xmin_age: number | null;
  }>(db.pool, db.health.horizon, []);
  return {
    sessionXminAge: r?.session_xmin_age ?? null,
    oldestTransactionSeconds: r?.oldest_xact_seconds ?? null,
    preparedXminAge: r?.prepared_xmin_age ?? null,
    slotXminAge: r?.slot_xmin_age ?? null,
  };
}
