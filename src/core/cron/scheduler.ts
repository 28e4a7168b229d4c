// The ticker: turns due schedule occurrences into ordinary jobs and moves each schedule
// forward. It runs on the elected leader, and writes in one transaction fenced by the leader
// lease's epoch: the occurrences' jobs (under the deterministic key cron:<schedule-id>:<instant>)
// and the advance, a compare-and-set that never moves backwards, commit together or not at
// all, and not at all once the epoch has lost the lease, so a leader that was paused between
// reading the schedules and firing them fires nothing (even an occurrence whose job retention
// has since deleted). A workflow schedule's occurrence starts a run in that same transaction,
// under the same key, which the runs' own (tenant, idempotency key) index makes unique. It
// sleeps until the earliest next fire time; wake() (a schedule changed, leadership gained)
// cuts the sleep short.

import type { Fenced } from '../../driver/leader-store.ts';
import type { Queryable } from '../../driver/queryable.ts';
import type { ScheduleAdvance, ScheduleStore } from '../../driver/schedule-store.ts';
import { BatonError, isBatonError } from '../../types/errors.ts';
import type { EnqueueResult, JobSpec } from '../../types/job.ts';
import { type MisfirePolicy, occurrenceKey, type Schedule } from '../../types/schedule.ts';
import { normalizeSpec } from '../job-spec.ts';
import { ENQUEUE_BATCH_MAX } from '../producer.ts';
import { type CronSchedule, parseCron } from './expression.ts';
import { planFiring } from './plan.ts';

/** Due schedules read and handled per statement pair; a larger backlog is worked off batch by batch. */
export const TICK_BATCH_DEFAULT = 1_000;
/** Batches one wake-up works through before it sleeps (an edit loop cannot spin the ticker). */
const MAX_BATCHES_PER_WAKE = 100;
/** After a failed tick (database away), the pause before the next try. */
const ERROR_BACKOFF_MS = 1_000;
/** Parsed expressions kept, by zone and text. */
const PARSED_CACHE_MAX = 20_000;

/** One occurrence of a workflow schedule: a run of `workflow` with `input`, keyed by its occurrence. */
export interface RunOccurrence {
  workflow: string;
  tenantId: string;
  input: unknown;
  idempotencyKey: string;
}

export interface SchedulerDeps {
  store: ScheduleStore;
  /** A workflow's queue and attempt budget from the registry; throws WORKFLOW_NOT_FOUND. */
  resolveWorkflow: (name: string) => Promise<{ queue: string; maxAttempts: number }>;
  /** Starts the occurrence's run on `client`, the fenced transaction; `created` false for a run its key already has. */
  startRun: (occ: RunOccurrence, target: { queue: string; maxAttempts: number }, client: Queryable) => Promise<{ created: boolean }>;
  /** Enqueues the occurrences (the engine's producer) on `client`, the fenced transaction. */
  enqueue: (specs: JobSpec[], client: Queryable) => Promise<EnqueueResult[]>;
  /** Wakes workers of these queues (jobs enqueued with a runAt send no wake-up of their own). */
  wake: (queues: string[]) => void;
  /** The leader lease's epoch while this process leads, else null: the ticker ticks only then. */
  leaderEpoch: () => string | null;
  /** Runs `fn` in a transaction fenced by `epoch` (see LeaderStore.fenced). */
  fenced: <T>(epoch: string, fn: (client: Queryable) => Promise<T>) => Promise<Fenced<T>>;
  /** Wall-clock time (epoch ms). Default Date.now; tests pass one they can move. */
  now?: () => number;
  misfireThresholdMs: number;
  maxAttemptsDefault: number;
  /** The longest sleep: a NOTIFY lost with its connection is made up for by then. */
  maxSleepMs: number;
  batchSize?: number;
  onFired: (schedule: Schedule, created: number) => void;
  /** A schedule was found with missed occurrences (once per catch-up). */
  onMisfire: (policy: MisfirePolicy) => void;
  onDisabled: (schedule: Schedule, reason: string) => void;
  onError: (err: unknown) => void;
}

export interface TickResult {
  /** Jobs created by this tick (duplicates another ticker made are not counted). */
  created: number;
  /** Schedules disabled by this tick. */
  disabled: number;
  /** True when the batch was full: more may be due. */
  more: boolean;
}

export class Scheduler {
  readonly #d: SchedulerDeps;
  readonly #now: () => number;
  readonly #parsed = new Map<string, CronSchedule>();
  #loop: Promise<void> | null = null;
  #stopped = false;
  #woken = false;
  #wakeSleep: (() => void) | null = null;

  constructor(deps: SchedulerDeps) {
    this.#d = deps;
    this.#now = deps.now ?? Date.now;
  }

  start(): void {
    if (this.#loop) return;
    this.#stopped = false;
    this.#loop = this.#run();
  }

  /** Re-reads the schedules now (one changed, or leadership was gained). */
  wake(): void {
    this.#woken = true;
    this.#wakeSleep?.();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wakeSleep?.();
    await this.#loop;
    this.#loop = null;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      this.#woken = false;
      let sleepMs = this.#d.maxSleepMs;
      if (this.#d.leaderEpoch() !== null) {
        try {
          for (let i = 0; i < MAX_BATCHES_PER_WAKE && !this.#stopped; i++) {
            if (!(await this.tick()).more) break;
          }
          const at = await this.#d.store.scheduleEarliestFire();
          if (at) sleepMs = Math.min(sleepMs, Math.max(0, at.getTime() - this.#now()));
        } catch (err) {
          this.#d.onError(err);
          sleepMs = ERROR_BACKOFF_MS;
        }
      }
      if (!this.#woken && !this.#stopped) await this.#sleep(sleepMs);
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.#wakeSleep = null;
        resolve();
      }
      this.#wakeSleep = done;
    });
  }

  #parse(s: Schedule): CronSchedule {
    const key = `${s.timezone}\u0000${s.cron}`;
    let cron = this.#parsed.get(key);
    if (!cron) {
      if (this.#parsed.size >= PARSED_CACHE_MAX) this.#parsed.clear();
      cron = parseCron(s.cron, s.timezone);
      this.#parsed.set(key, cron);
    }
    return cron;
  }

  /** One pass over the due schedules (at most one batch), while this process leads. Exposed for tests; the loop calls it. */
  async tick(): Promise<TickResult> {
    const { store } = this.#d;
    const epoch = this.#d.leaderEpoch();
    if (epoch === null) return { created: 0, disabled: 0, more: false };
    const now = this.#now();
    const batch = this.#d.batchSize ?? TICK_BATCH_DEFAULT;
    const due = await store.scheduleListDue({ now: new Date(now), limit: batch });
    const specs: JobSpec[] = [];
    const runs: Array<{ occ: RunOccurrence; target: { queue: string; maxAttempts: number }; scheduleId: string }> = [];
    const advances: Array<ScheduleAdvance & { schedule: Schedule; fired: number; missed: number }> = [];
    const finished: Array<{ schedule: Schedule; reason: string }> = [];
    const broken: Array<{ schedule: Schedule; reason: string }> = [];
    for (const s of due) {
      try {
        const plan = planFiring(this.#parse(s), {
          from: s.nextFireAt as Date,
          now,
          misfireThresholdMs: this.#d.misfireThresholdMs,
          policy: s.misfirePolicy,
          catchUpLimit: s.catchUpLimit,
        });
        let fired: number;
        if (s.workflow !== null) {
          // Where the run goes is the registry's answer now (a redeployed workflow may have moved queue).
          const target = plan.fire.length > 0 ? await this.#d.resolveWorkflow(s.workflow) : null;
          for (const at of target ? plan.fire : []) {
            const occ = { workflow: s.workflow, tenantId: s.tenantId, input: s.payload, idempotencyKey: occurrenceKey(s.id, at) };
            runs.push({ occ, target: target as { queue: string; maxAttempts: number }, scheduleId: s.id });
          }
          fired = plan.fire.length;
        } else {
          // A row written before workflow targets existed: its jobs would carry no run and dead-letter.
          if (s.jobType.startsWith('workflow:'))
            throw new BatonError(
              'INVALID_ARGUMENT',
              `jobType ${JSON.stringify(s.jobType)} is a workflow's driving job: use a workflow target`,
            );
          // One occurrence's job validated stands for all of them: they differ only in run_at and key.
          if (plan.fire.length > 0) normalizeSpec(this.#spec(s, plan.fire[0] as Date), this.#d.maxAttemptsDefault);
          const mine = plan.fire.map((at) => this.#spec(s, at));
          specs.push(...mine);
          fired = mine.length;
        }
        if (plan.next === null) {
          finished.push({
            schedule: s,
            reason: `the expression ${JSON.stringify(s.cron)} has no fire time after ${new Date(now).toISOString()}`,
          });
        } else {
          const lastFired = plan.fire.at(-1) ?? null;
          advances.push({
            id: s.id,
            version: s.version,
            expected: s.nextFireAt as Date,
            next: plan.next,
            lastFired,
            schedule: s,
            fired,
            missed: plan.missed,
          });
        }
      } catch (err) {
        // Invalid rows disable themselves with a readable reason; anything else is a real failure.
        if (!isBatonError(err) || err.code === 'DB_UNAVAILABLE' || err.code === 'INTERNAL') throw err;
        broken.push({ schedule: s, reason: err.message });
      }
    }
    const toDisable = [...broken, ...finished];
    if (specs.length === 0 && runs.length === 0 && advances.length === 0 && toDisable.length === 0)
      return { created: 0, disabled: 0, more: due.length === batch };
    const fenced = await this.#d.fenced(epoch, async (client) => {
      const results: EnqueueResult[] = [];
      for (let i = 0; i < specs.length; i += ENQUEUE_BATCH_MAX)
        results.push(...(await this.#d.enqueue(specs.slice(i, i + ENQUEUE_BATCH_MAX), client)));
      const started: typeof runs = [];
      for (const r of runs) if ((await this.#d.startRun(r.occ, r.target, client)).created) started.push(r);
      const written = await store.scheduleAdvanceMany(
        advances.map(({ id, version, expected, next, lastFired }) => ({ id, version, expected, next, lastFired })),
        client,
      );
      const disabled: Array<{ schedule: Schedule; reason: string }> = [];
      for (const d of toDisable) {
        if (await store.scheduleDisable({ id: d.schedule.id, version: d.schedule.version, reason: d.reason }, client)) disabled.push(d);
      }
      return { results, started, written, disabled };
    });
    // The epoch lost the lease before the transaction could take its fence: nothing was written.
    if (!fenced.held) return { created: 0, disabled: 0, more: false };
    const { results, started, written, disabled } = fenced.value;
    let created = 0;
    const queues = new Set<string>();
    const byKey = new Map<string, number>();
    for (const r of results) {
      if (!r.created) continue;
      created++;
      queues.add(r.job.queue);
      const id = (r.job.idempotencyKey as string).split(':')[1] as string;
      byKey.set(id, (byKey.get(id) ?? 0) + 1);
    }
    for (const r of started) {
      created++;
      queues.add(r.target.queue);
      byKey.set(r.scheduleId, (byKey.get(r.scheduleId) ?? 0) + 1);
    }
    if (queues.size > 0) this.#d.wake([...queues]);
    for (const a of advances) if (byKey.has(a.id)) this.#d.onFired(a.schedule, byKey.get(a.id) as number);
    for (const f of finished) if (byKey.has(f.schedule.id)) this.#d.onFired(f.schedule, byKey.get(f.schedule.id) as number);
    for (const a of advances) if (written.has(a.id) && a.missed > 0) this.#d.onMisfire(a.schedule.misfirePolicy);
    for (const { schedule, reason } of disabled) this.#d.onDisabled(schedule, reason);
    return { created, disabled: disabled.length, more: due.length === batch };
  }

  /** One occurrence's job (validated in tick(), so that one bad schedule cannot fail the batch). */
  #spec(s: Schedule, at: Date): JobSpec {
    const spec: JobSpec = {
      jobType: s.jobType,
      queue: s.queue,
      tenantId: s.tenantId,
      payload: s.payload,
      priority: s.priority,
      runAt: at,
      idempotencyKey: occurrenceKey(s.id, at),
      ...(s.maxAttempts === null ? {} : { maxAttempts: s.maxAttempts }),
    };
    return spec;
  }
}
