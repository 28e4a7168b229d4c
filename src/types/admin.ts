// Read models of the fleet and the database, as the store answers them and operators read them.

/** One worker process as admin.workers lists it: host, pid, queues, jobs in flight, liveness, leadership. */
export interface WorkerInfo {
  id: string;
  hostname: string;
  pid: number;
  /** queue -> concurrency */
  queues: Record<string, number>;
  /** Job types it has handlers for. */
  jobTypes: string[];
  inFlight: number;
  startedAt: Date;
  lastSeenAt: Date;
  /** True while the worker's database session holds its presence lock. */
  alive: boolean;
  /** True for the elected leader, which runs the periodic maintenance (while alive). */
  leader: boolean;
}

/** Baton's tables and the server, as operators watch them (see AdminApi.health). */
export interface DatabaseHealth {
  /** When this was read (cached reads return the same object for HEALTH_CACHE_MS). */
  readAt: Date;
  /** Per queue with due pending jobs: how long the oldest has been due, and how many are due. */
  queues: Array<{ queue: string; oldestDueSeconds: number; due: number }>;
  /** Baton's tables: sizes in bytes, tuple counts (statistics, not exact), last (auto)vacuum and analyze. */
  tables: Array<{
    name: string;
    totalBytes: number;
    tableBytes: number;
    indexBytes: number;
    liveTuples: number;
    deadTuples: number;
    lastVacuumAt: Date | null;
    lastAnalyzeAt: Date | null;
  }>;
  /**
   * The server's oldest transaction horizon, in transactions (xids) behind the newest, from
   * sessions, prepared transactions and replication slots; and the oldest open transaction's
   * age in seconds. While a horizon stays old, dead rows in Baton's tables cannot be removed.
   */
  horizon: {
    sessionXminAge: number | null;
    oldestTransactionSeconds: number | null;
    preparedXminAge: number | null;
    slotXminAge: number | null;
  };
}
