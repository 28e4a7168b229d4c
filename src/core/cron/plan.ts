// What one tick fires for one due schedule: the occurrences from its stored next fire time
// up to now, split into on-time ones (always fired) and missed ones (older than the misfire
// threshold: they elapsed while nothing was ticking), which the misfire policy picks from.
// Pure: no clock, no database.

import type { MisfirePolicy } from '../../types/schedule.ts';
import type { CronSchedule } from './expression.ts';

export interface FirePlan {
  /** The occurrences to enqueue, oldest first, each to run at its own instant. */
  fire: Date[];
  /** Missed occurrences seen (all of them, or at least as many as the policy needed to look at). */
  missed: number;
  /** The first occurrence after now; null when the expression never fires again. */
  next: Date | null;
}

export interface PlanParams {
  /** The schedule's stored next fire time (an occurrence, at or before now). */
  from: Date;
  now: number;
  /** An occurrence older than now - misfireThresholdMs was missed. */
  misfireThresholdMs: number;
  policy: MisfirePolicy;
  catchUpLimit: number;
}

/**
 * Scans back from now over windows that grow fourfold until it has seen as many missed
 * occurrences as the policy can use, or reached `from`: a schedule that fires every second
 * and was stopped for a year costs a few windows, not 31 million steps.
 */
export function planFiring(cron: CronSchedule, p: PlanParams): FirePlan {
  const first = p.from.getTime();
  const lateBefore = p.now - p.misfireThresholdMs;
  const want = p.policy === 'fire_all' ? p.catchUpLimit : p.policy === 'fire_once' ? 1 : 0;
  for (let span = Math.max(60_000, 2 * p.misfireThresholdMs); ; span *= 4) {
    const start = Math.max(first - 1, p.now - span);
    const onTime: Date[] = [];
    const missed: Date[] = [];
    let t = cron.next(new Date(start));
    while (t !== null && t.getTime() <= p.now) {
      (t.getTime() < lateBefore ? missed : onTime).push(t);
      t = cron.next(t);
    }
    if (start === first - 1 || missed.length >= want) {
      const caught = p.policy === 'skip' ? [] : missed.slice(-want);
      return { fire: [...caught, ...onTime], missed: missed.length, next: t };
    }
  }
}
