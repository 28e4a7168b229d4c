// Checks a cron chaos run from the jobs table alone: schedules firing every second while
// the leader is killed (kill -9) and paused (SIGSTOP). Within the window, for each schedule:
//   - every job is for an occurrence (a whole second in the window; key and run_at agree),
//     at most one per occurrence, and ran to success;
//   - fire_all: every occurrence became exactly one job;
//   - skip and fire_once: every occurrence the ticker reached on time (its fire_all job was
//     made within the threshold) has its job, so nothing on time is dropped;
//   - skip: no job was made later than the threshold (a missed occurrence never fires);
//   - fire_once: a run of occurrences without a job is always ended by one late job, the
//     catch-up for the latest missed occurrence.

export interface CronJob {
  key: string;
  runAt: number;
  createdAt: number;
  state: string;
}

export interface CronWindow {
  /** The first and the last occurrence (ms) the run must account for. */
  from: number;
  to: number;
  thresholdMs: number;
  /** Clock and statement skew allowed around the threshold. */
  marginMs: number;
}

export interface CronSchedules {
  fire_all: { id: string; jobs: CronJob[] };
  fire_once: { id: string; jobs: CronJob[] };
  skip: { id: string; jobs: CronJob[] };
}

export interface CronCheck {
  ok: boolean;
  violations: string[];
  occurrences: number;
  jobs: Record<keyof CronSchedules, number>;
  /** Occurrences the ticker reached later than the threshold (from fire_all's jobs). */
  missed: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function checkCron(s: CronSchedules, w: CronWindow): CronCheck {
  const violations: string[] = [];
  const occurrences: number[] = [];
  for (let t = Math.ceil(w.from / 1000) * 1000; t <= w.to; t += 1000) occurrences.push(t);
  const byOccurrence = {} as Record<keyof CronSchedules, Map<number, CronJob>>;

  for (const policy of ['fire_all', 'fire_once', 'skip'] as const) {
    const map = new Map<number, CronJob>();
    for (const j of s[policy].jobs) {
      const [prefix, id, ...rest] = j.key.split(':');
      const keyAt = Date.parse(rest.join(':'));
      if (prefix !== 'cron' || id !== s[policy].id || keyAt !== j.runAt)
        violations.push(`${policy}: job ${j.key} has run_at ${iso(j.runAt)}`);
      if (j.runAt % 1000 !== 0) violations.push(`${policy}: job ${j.key} is not for an occurrence (not a whole second)`);
      if (j.state !== 'succeeded') violations.push(`${policy}: job ${j.key} ended ${j.state}`);
      if (map.has(j.runAt)) violations.push(`${policy}: occurrence ${iso(j.runAt)} has two jobs`);
      map.set(j.runAt, j);
    }
    byOccurrence[policy] = map;
  }

  const all = byOccurrence.fire_all;
  let missed = 0;
  for (const o of occurrences) {
    const ref = all.get(o);
    if (!ref) {
      violations.push(`fire_all: occurrence ${iso(o)} has no job`);
      continue;
    }
    const lateness = ref.createdAt - o;
    if (lateness > w.thresholdMs + w.marginMs) missed++;
    if (lateness <= w.thresholdMs - w.marginMs) {
      for (const policy of ['fire_once', 'skip'] as const) {
        if (!byOccurrence[policy].has(o))
          violations.push(`${policy}: occurrence ${iso(o)} was reached on time (${lateness} ms) but has no job`);
      }
    }
  }
  for (const j of byOccurrence.skip.values()) {
    if (j.createdAt - j.runAt > w.thresholdMs + w.marginMs) {
      violations.push(
        `skip: occurrence ${iso(j.runAt)} was fired ${j.createdAt - j.runAt} ms late (past the ${w.thresholdMs} ms threshold)`,
      );
    }
  }
  // fire_once: each run of occurrences without a job ends with the late catch-up job.
  const once = byOccurrence.fire_once;
  for (let i = 0; i < occurrences.length; i++) {
    const o = occurrences[i]!;
    if (once.has(o)) continue;
    let k = i;
    while (k < occurrences.length && !once.has(occurrences[k]!)) k++;
    const after = occurrences[k];
    if (after !== undefined) {
      const j = once.get(after)!;
      if (j.createdAt - j.runAt <= w.thresholdMs - w.marginMs) {
        violations.push(
          `fire_once: occurrences ${iso(o)}..${iso(occurrences[k - 1]!)} have no job, and the next job (${iso(after)}) is no catch-up (${j.createdAt - j.runAt} ms late)`,
        );
      }
    }
    i = k;
  }
  return {
    ok: violations.length === 0,
    violations,
    occurrences: occurrences.length,
    jobs: { fire_all: s.fire_all.jobs.length, fire_once: s.fire_once.jobs.length, skip: s.skip.jobs.length },
    missed,
  };
}
