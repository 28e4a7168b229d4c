// ScheduleStore on node-postgres: runs the named schedule queries and maps rows.

import type { ScheduleAdvance, ScheduleStore, ScheduleWrite } from '../../driver/schedule-store.ts';
import { isJobId } from '../../types/job.ts';
import type { MisfirePolicy, Schedule } from '../../types/schedule.ts';
import { translatePgError } from './errors.ts';
import type { PgPoolLike, Queryable, QueryConfigLike } from './pool.ts';
import { type ScheduleQueries, scheduleQueries } from './queries/schedule.ts';
import { queryRows } from './query-rows.ts';

interface ScheduleRow {
  id: string;
  tenant_id: string;
  name: string;
  cron: string;
  timezone: string;
  job_type: string;
  workflow: string | null;
  queue: string;
  payload: unknown;
  priority: number;
  max_attempts: number | null;
  misfire_policy: MisfirePolicy;
  catch_up_limit: number;
  enabled: boolean;
  disabled_reason: string | null;
  next_fire_at: Date | null;
  last_fired_at: Date | null;
  version: string;
  created_at: Date;
  updated_at: Date;
}

function rowToSchedule(r: ScheduleRow): Schedule {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    name: r.name,
    cron: r.cron,
    timezone: r.timezone,
    jobType: r.job_type,
    workflow: r.workflow,
    queue: r.queue,
    payload: r.payload,
    priority: r.priority,
    maxAttempts: r.max_attempts,
    misfirePolicy: r.misfire_policy,
    catchUpLimit: r.catch_up_limit,
    status: r.enabled ? 'enabled' : r.disabled_reason === null ? 'paused' : 'disabled',
    disabledReason: r.disabled_reason,
    nextFireAt: r.next_fire_at,
    lastFiredAt: r.last_fired_at,
    version: r.version,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export class PgScheduleStore implements ScheduleStore {
  readonly #pool: PgPoolLike;
  readonly #q: ScheduleQueries;
  readonly #channel: string;

  /** `quotedSchema` must already be quoted (see quoteSchema); `channel` is the cron NOTIFY channel. */
  constructor(pool: PgPoolLike, quotedSchema: string, channel: string) {
    this.#pool = pool;
    this.#q = scheduleQueries(quotedSchema);
    this.#channel = channel;
  }

  #rows<R>(query: QueryConfigLike, values: unknown[], on: Queryable = this.#pool): Promise<R[]> {
    return queryRows<R>(on, query, values);
  }

  #definition(w: Omit<ScheduleWrite, 'tenantId' | 'name'>): unknown[] {
    return [
      w.cron,
      w.timezone,
      w.jobType,
      w.queue,
      JSON.stringify(w.payload ?? null),
      w.priority,
      w.maxAttempts,
      w.misfirePolicy,
      w.catchUpLimit,
      w.nextFireAt,
      w.workflow,
    ];
  }

  async scheduleUpsert(w: ScheduleWrite): Promise<{ schedule: Schedule; created: boolean; changed: boolean }> {
    const [row] = await this.#rows<ScheduleRow & { created: boolean }>(this.#q.upsert, [w.tenantId, w.name, ...this.#definition(w)]);
    if (row) return { schedule: rowToSchedule(row), created: row.created, changed: true };
    const [same] = await this.#rows<ScheduleRow>(this.#q.selectByName, [w.tenantId, w.name]);
    if (!same) throw translatePgError(new Error(`schedule ${w.tenantId}/${w.name} vanished during upsert`));
    return { schedule: rowToSchedule(same), created: false, changed: false };
  }

  async scheduleGet(id: string, tenantId?: string): Promise<Schedule | null> {
    if (!isJobId(id)) return null;
    const [row] =
      tenantId === undefined
        ? await this.#rows<ScheduleRow>(this.#q.get, [id])
        : await this.#rows<ScheduleRow>(this.#q.getInTenant, [id, tenantId]);
    return row ? rowToSchedule(row) : null;
  }

  async scheduleList(p: { tenantId?: string | undefined; limit: number; offset: number }): Promise<Schedule[]> {
    return (await this.#rows<ScheduleRow>(this.#q.list, [p.tenantId ?? null, p.limit, p.offset])).map(rowToSchedule);
  }

  async scheduleUpdate(p: {
    id: string;
    version: string;
    write: Omit<ScheduleWrite, 'tenantId' | 'name'>;
    enabled: boolean;
  }): Promise<Schedule | null> {
    if (!isJobId(p.id)) return null;
    const [row] = await this.#rows<ScheduleRow>(this.#q.update, [p.id, p.version, ...this.#definition(p.write), p.enabled]);
    return row ? rowToSchedule(row) : null;
  }

  async scheduleRemove(id: string): Promise<boolean> {
    if (!isJobId(id)) return false;
    try {
      return ((await this.#pool.query({ ...this.#q.remove, values: [id] })).rowCount ?? 0) > 0;
    } catch (err) {
      throw translatePgError(err);
    }
  }

  async scheduleRemoveExcept(keep: Array<{ tenantId: string; name: string }>): Promise<number> {
    try {
      const r = await this.#pool.query({ ...this.#q.removeExcept, values: [keep.map((k) => k.tenantId), keep.map((k) => k.name)] });
      return r.rowCount ?? 0;
    } catch (err) {
      throw translatePgError(err);
    }
  }

  async scheduleListDue(p: { now: Date; limit: number }): Promise<Schedule[]> {
    return (await this.#rows<ScheduleRow>(this.#q.due, [p.now, p.limit])).map(rowToSchedule);
  }

  async scheduleEarliestFire(): Promise<Date | null> {
    const [row] = await this.#rows<{ at: Date | null }>(this.#q.earliest, []);
    return row?.at ?? null;
  }

  async scheduleAdvanceMany(items: ScheduleAdvance[], on: Queryable = this.#pool): Promise<Set<string>> {
    if (items.length === 0) return new Set();
    const rows = await this.#rows<{ id: string }>(
      this.#q.advance,
      [
        items.map((i) => i.id),
        items.map((i) => i.version),
        items.map((i) => i.expected),
        items.map((i) => i.next),
        items.map((i) => i.lastFired),
      ],
      on,
    );
    return new Set(rows.map((r) => r.id));
  }

  async scheduleDisable(p: { id: string; version: string; reason: string }, on: Queryable = this.#pool): Promise<boolean> {
    try {
      return ((await on.query({ ...this.#q.disable, values: [p.id, p.version, p.reason] })).rowCount ?? 0) > 0;
    } catch (err) {
      throw translatePgError(err);
    }
  }

  async scheduleNotifyChanged(): Promise<void> {
    await this.#rows(this.#q.notify, [this.#channel, '']);
  }
}
