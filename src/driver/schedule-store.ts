// The seam between the cron code and the schedules table: one method per operation.
// Every write the ticker makes is conditional (version and next_fire_at), so any number
// of tickers may run; see docs/cron.md for the argument.
// @internal — not a public API.

import type { Schedule } from '../types/schedule.ts';
import type { Queryable } from './queryable.ts';

/** A validated, defaulted schedule as stored: the schedule's own fields, and its first fire time. */
export type ScheduleWrite = Pick<
  Schedule,
  | 'tenantId'
  | 'name'
  | 'cron'
  | 'timezone'
  | 'jobType'
  | 'workflow'
  | 'queue'
  | 'payload'
  | 'priority'
  | 'maxAttempts'
  | 'misfirePolicy'
  | 'catchUpLimit'
> & {
  /** Used when the schedule is new, or its expression or zone changed, or it was disabled. */
  nextFireAt: Date | null;
};

export interface ScheduleAdvance {
  id: string;
  version: string;
  /** The next_fire_at the ticker read: the write happens only if it is still the stored one. */
  expected: Date;
  next: Date;
  /** The latest occurrence enqueued by this step, if any. */
  lastFired: Date | null;
}

export interface ScheduleStore {
  /** Creates, or updates by (tenant, name); an unchanged definition writes nothing. */
  scheduleUpsert(w: ScheduleWrite): Promise<{ schedule: Schedule; created: boolean; changed: boolean }>;
  /** With tenantId, null for another tenant's schedule: the statement itself is scoped. */
  scheduleGet(id: string, tenantId?: string): Promise<Schedule | null>;
  scheduleList(p: { tenantId?: string | undefined; limit: number; offset: number }): Promise<Schedule[]>;
  /** Replaces the definition if `version` is still current; clears any disabled reason. */
  scheduleUpdate(p: {
    id: string;
    version: string;
    write: Omit<ScheduleWrite, 'tenantId' | 'name'>;
    enabled: boolean;
  }): Promise<Schedule | null>;
  scheduleRemove(id: string): Promise<boolean>;
  /** Deletes every schedule not named in `keep`; returns how many. */
  scheduleRemoveExcept(keep: Array<{ tenantId: string; name: string }>): Promise<number>;
  /** Enabled schedules whose next fire time is at or before `now`, earliest first. */
  scheduleListDue(p: { now: Date; limit: number }): Promise<Schedule[]>;
  /** The earliest next fire time of any enabled schedule. */
  scheduleEarliestFire(): Promise<Date | null>;
  /**
   * Moves each schedule forward, only where version and next_fire_at are as read (never
   * backwards). Returns the ids written. On `on` (the ticker's fenced transaction) when given.
   */
  scheduleAdvanceMany(items: ScheduleAdvance[], on?: Queryable): Promise<Set<string>>;
  /** Disables a schedule with a reason, if `version` is still current. On `on` when given. */
  scheduleDisable(p: { id: string; version: string; reason: string }, on?: Queryable): Promise<boolean>;
  /** Tells every ticker that a schedule changed (NOTIFY, after the change committed). */
  scheduleNotifyChanged(): Promise<void>;
}
