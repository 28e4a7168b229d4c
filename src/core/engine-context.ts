// What an engine is built from (EngineDeps, given by the composition root), what it shares with
// its features (EngineContext), and what a feature adds to it (FeatureParts). A capability adds
// its services and notification routes through FeatureParts; the engine's lifecycle runs them.

import type { Executor, NotificationListener, Presence } from '../driver/executor.ts';
import type { LeaderStore } from '../driver/leader-store.ts';
import type { MigrateResult } from '../driver/migrations.ts';
import type { OutboxStore } from '../driver/outbox-store.ts';
import type { ScheduleStore } from '../driver/schedule-store.ts';
import type { WorkflowStore } from '../driver/workflow-store.ts';
import type { EnqueueResult, JobSpec } from '../types/job.ts';
import type { ScheduleInput } from '../types/schedule.ts';
import type { EnqueueOptions } from './baton.ts';
import type { Clock } from './clock.ts';
import type { EngineConfig } from './config.ts';
import type { EngineEventEmitter } from './events.ts';
import type { Handler, HandlerMap } from './handler.ts';
import type { LeaderLease } from './leader-lease.ts';
import type { Logger } from './logger.ts';
import type { RelayConfig } from './outbox/config.ts';
import type { PublisherMap } from './outbox/publisher.ts';
import type { Service } from './service.ts';
import type { Tracing } from './tracing.ts';

export interface EngineDeps {
  config: EngineConfig;
  executor: Executor;
  /** Runs admin reads and operator actions, apart from the claim path's connections. */
  adminExecutor: Executor;
  handlers: HandlerMap;
  logger: Logger;
  lockNamespace: number;
  migrate: () => Promise<MigrateResult>;
  /** Opens this many query connections ahead of use (never rejects). */
  warmPool: (connections: number) => Promise<void>;
  /** `onAcquired` runs each time the presence lock is (re-)acquired. */
  createPresence: (hooks: { onAcquired: () => void; jobTypes: string[] }) => Presence;
  /** The leader lease's row, on the engine's pool. */
  leaderStore: LeaderStore;
  createListener: (hooks: {
    /** `payload` is the notification's ('' for wake-ups). */
    onNotify: (channel: string, payload: string) => void;
    onConnected: () => void;
    onError: (err: unknown) => void;
  }) => NotificationListener;
  /** Releases resources the engine owns (e.g. a pool it created). Called once, at the end of stop(). */
  close: () => Promise<void>;
  /** The schedules table, on the engine's pool (the ticker) and on the admin pool (baton.cron). */
  scheduleStore: ScheduleStore;
  adminScheduleStore: ScheduleStore;
  /** Schedules declared in the options (reconciled at start()), and whether to delete undeclared ones. */
  schedules?: { declared: readonly ScheduleInput[]; pruneUndeclared: boolean };
  /** Local monotonic time (lease proofs, claim lateness). Default: the system's. */
  clock?: Clock;
  /** Trace context capture at enqueue and a span per attempt. Default: none. */
  tracing?: Tracing;
  /** Where workflow runs, steps and events live. */
  workflowStore: WorkflowStore;
  /** The outbox table (engine pool and admin pool), and the relay's publishers and settings. */
  outbox: {
    store: OutboxStore;
    adminStore: OutboxStore;
    config: RelayConfig;
    publishers: PublisherMap;
    /** Run a relay in this process (when there are publishers). */
    relay: boolean;
  };
}

/** What the engine shares with the features it is composed of. */
export interface EngineContext {
  readonly deps: EngineDeps;
  readonly config: EngineConfig;
  /** The engine's logger (with its worker id). */
  readonly log: Logger;
  readonly events: EngineEventEmitter;
  /** The runner's handlers: a feature may add job types to it (before start()). */
  readonly handlers: Record<string, Handler>;
  /** The leader lease; null when this process may not lead (leader: false or reaper: false). */
  readonly lease: LeaderLease | null;
  /** The lease's epoch while this process leads, else null: what leader-only writes are fenced with. */
  leaderEpoch(): string | null;
  enqueueMany(specs: JobSpec[], opts?: EnqueueOptions): Promise<EnqueueResult[]>;
  /** Wakes `queues` here and, in notify mode, in other processes. */
  wakeQueues(queues: string[]): void;
  /** Logs a failure of a background part and emits it as the engine's `error` event, tagged `where`. */
  onError(where: string): (err: unknown) => void;
}

/** What one feature adds to the engine's lifecycle. Every part is optional. */
export interface FeatureParts {
  /**
   * Run in every process: started, in order, after the pool and before the worker's claim loops,
   * stopped after the worker has drained (a handler may use them until it returns).
   */
  services?: readonly Service[];
  /** Run only while this process holds the leader lease (started on taking it, stopped on losing it). */
  leaderServices?: readonly Service[];
  /** NOTIFY channels on the worker's LISTEN connection (notify mode), and what each one does. */
  routes?: ReadonlyMap<string, (payload: string) => void>;
  /** The worker's LISTEN connection (re)connected: notifications sent meanwhile are gone. */
  onListenerConnected?: () => void;
}
