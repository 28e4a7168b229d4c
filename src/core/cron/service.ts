// Cron inside an engine: the baton.cron API, the ticker (run while this process leads, its
// writes fenced by the leader lease),
// the declarative schedules reconciled at start(), and the counters metrics read.

import type { Fenced } from '../../driver/leader-store.ts';
import type { Queryable } from '../../driver/queryable.ts';
import type { ScheduleStore } from '../../driver/schedule-store.ts';
import { BatonError, isBatonError } from '../../types/errors.ts';
import type { EnqueueResult, JobSpec } from '../../types/job.ts';
import type { MisfirePolicy, ScheduleInput } from '../../types/schedule.ts';
import type { Logger } from '../logger.ts';
import type { Service } from '../service.ts';
import { type CronApi, createCronApi, scheduleInputSchema, validateDefinition } from './api.ts';
import { Scheduler, type SchedulerDeps } from './scheduler.ts';

/** What this process's scheduler did: occurrences fired, catch-ups by misfire policy, schedules disabled (`stats().cron`). */
export interface CronCounters {
  /** Occurrences turned into jobs by this process. */
  fired: number;
  /** Catch-ups: times a schedule was found with missed occurrences (nothing ticked for longer than cronMisfireThresholdMs), by its misfire policy. */
  misfires: Record<MisfirePolicy, number>;
  /** Schedules this process disabled. */
  disabled: number;
}

export interface CronServiceDeps {
  /** The ticker's store (the engine's pool). */
  store: ScheduleStore;
  /** The API's store (the admin pool). */
  adminStore: ScheduleStore;
  misfireThresholdMs: number;
  maxAttemptsDefault: number;
  maxSleepMs: number;
  /** Enqueues on `client`, the ticker's fenced transaction. */
  enqueue: (specs: JobSpec[], client: Queryable) => Promise<EnqueueResult[]>;
  /** A workflow's queue and attempt budget from the registry of defined workflows; throws WORKFLOW_NOT_FOUND. */
  resolveWorkflow: SchedulerDeps['resolveWorkflow'];
  /** Why this process's input schema of a workflow refuses an input (null: accepted, or no schema here). */
  workflowInputRefusal?: (name: string, input: unknown) => string | null;
  /** Starts a workflow schedule's occurrence on `client`, the ticker's fenced transaction. */
  startRun: SchedulerDeps['startRun'];
  wake: (queues: string[]) => void;
  /** The leader lease's epoch while this process leads, else null. */
  leaderEpoch: () => string | null;
  fenced: <T>(epoch: string, fn: (client: Queryable) => Promise<T>) => Promise<Fenced<T>>;
  log: Logger;
  onError: (err: unknown) => void;
  /** Schedules declared in the options, created or updated by name at start(). */
  declared: readonly ScheduleInput[];
  /** Delete schedules that are not declared (default false: they are left alone). */
  pruneUndeclared: boolean;
  now?: () => number;
}

export class CronService implements Service {
  readonly name = 'cron ticker';
  readonly api: CronApi;
  readonly counters: CronCounters = { fired: 0, misfires: { skip: 0, fire_once: 0, fire_all: 0 }, disabled: 0 };
  readonly #d: CronServiceDeps;
  readonly #scheduler: Scheduler;
  readonly #declared: ScheduleInput[];

  /** @throws BatonError INVALID_CONFIG naming every bad declared schedule. */
  constructor(deps: CronServiceDeps) {
    this.#d = deps;
    const now = deps.now ?? Date.now;
    this.#declared = validateDeclared(deps.declared, now(), deps.maxAttemptsDefault);
    this.#scheduler = new Scheduler({
      store: deps.store,
      enqueue: deps.enqueue,
      resolveWorkflow: deps.resolveWorkflow,
      startRun: deps.startRun,
      wake: deps.wake,
      leaderEpoch: deps.leaderEpoch,
      fenced: deps.fenced,
      now,
      misfireThresholdMs: deps.misfireThresholdMs,
      maxAttemptsDefault: deps.maxAttemptsDefault,
      maxSleepMs: deps.maxSleepMs,
      onFired: (_, n) => {
        this.counters.fired += n;
      },
      onMisfire: (policy) => {
        this.counters.misfires[policy]++;
      },
      onDisabled: (s, reason) => {
        this.counters.disabled++;
        deps.log.warn({ schedule: s.id, tenantId: s.tenantId, name: s.name, reason }, 'baton: schedule disabled');
      },
      onError: deps.onError,
    });
    this.api = createCronApi({
      store: deps.adminStore,
      maxAttemptsDefault: deps.maxAttemptsDefault,
      now,
      changed: () => this.#scheduler.wake(),
      onNotifyError: deps.onError,
      resolveWorkflow: deps.resolveWorkflow,
      ...(deps.workflowInputRefusal ? { workflowInputRefusal: deps.workflowInputRefusal } : {}),
    });
  }

  /** Creates or updates the declared schedules; with pruneUndeclared, deletes the others. */
  async reconcile(): Promise<void> {
    for (const s of this.#declared) await this.api.upsert(s);
    if (this.#d.pruneUndeclared) {
      const n = await this.#d.adminStore.scheduleRemoveExcept(
        this.#declared.map((s) => ({ tenantId: s.tenantId ?? 'default', name: s.name })),
      );
      if (n > 0) {
        this.#d.log.info({ removed: n }, 'baton: removed schedules not declared in the options');
        await this.#d.adminStore.scheduleNotifyChanged().catch(this.#d.onError);
      }
    }
  }

  /** Starts the ticker loop (on taking the leader lease); it ticks only while this process leads. */
  start(): void {
    this.#scheduler.start();
  }

  /** A schedule changed elsewhere, or leadership changed: look again now. */
  wake(): void {
    this.#scheduler.wake();
  }

  stop(): Promise<void> {
    return this.#scheduler.stop();
  }

  /** One ticker pass, for tests. */
  tick() {
    return this.#scheduler.tick();
  }
}

function validateDeclared(declared: readonly ScheduleInput[], now: number, maxAttemptsDefault: number): ScheduleInput[] {
  const issues: string[] = [];
  const seen = new Set<string>();
  declared.forEach((input, i) => {
    const parsed = scheduleInputSchema.safeParse(input);
    if (!parsed.success) {
      for (const e of parsed.error.issues) issues.push(`schedules[${i}].${e.path.join('.') || '(root)'}: ${e.message}`);
      return;
    }
    const key = `${parsed.data.tenantId ?? 'default'}/${parsed.data.name}`;
    if (seen.has(key)) issues.push(`schedules[${i}].name: ${key} is declared twice`);
    seen.add(key);
    try {
      validateDefinition(parsed.data, parsed.data.tenantId ?? 'default', now, maxAttemptsDefault);
    } catch (err) {
      issues.push(`schedules[${i}]: ${isBatonError(err) ? err.message : String(err)}`);
    }
  });
  if (issues.length > 0) throw new BatonError('INVALID_CONFIG', `invalid Baton options: ${issues.join('; ')}`, { details: issues });
  return [...declared];
}
