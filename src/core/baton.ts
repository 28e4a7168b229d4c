// The public shape of an engine instance: what createBaton() returns. The
// daemon, HTTP edge, benchmarks and tests all program against this.

import type { EventEmitter } from 'node:events';
import type { MigrateResult } from '../driver/migrations.ts';
import type { Queryable } from '../driver/queryable.ts';
import type { EnqueueResult, JobSpec } from '../types/job.ts';
import type { SendEventResult, StartRunOptions, StartRunResult, WorkflowFn, WorkflowOptions, WorkflowRunsApi } from '../types/workflow.ts';
import type { AdminApi } from './admin.ts';
import type { EngineConfig } from './config.ts';
import type { CronApi } from './cron/api.ts';
import type { CronCounters } from './cron/service.ts';
import type { EngineEvents } from './events.ts';
import type { OutboxApi } from './outbox/service.ts';
import type { TraceCarrier } from './tracing.ts';
import type { WorkflowBuilder } from './workflow/builder.ts';
import type { WorkflowCounters } from './workflow/execution.ts';

/** Options of enqueue and enqueueMany: the caller's transaction, the NOTIFY, the trace context, the key space. */
export interface EnqueueOptions {
  /**
   * Run the insert on this client (the caller's open transaction). Baton never begins,
   * commits or rolls back on it. The wake-up NOTIFY is sent inside that transaction, so
   * PostgreSQL delivers it only if and when the caller commits (pass notify: false to skip it
   * and call baton.wake(queue) after COMMIT yourself).
   */
  client?: Queryable;
  /** Default true. */
  notify?: boolean;
  /**
   * The trace context to store with the jobs (e.g. from an HTTP request's traceparent header).
   * Default: the active OpenTelemetry context, when @opentelemetry/api is installed.
   */
  traceContext?: TraceCarrier;
  /**
   * Where the jobs' concurrency keys live. 'shared' (default): as given, fleet-wide, so
   * `vendor:x` is one key whatever the tenant. 'tenant': in each job's tenant's own space,
   * stored as `<tenantId>#<key>` (tenantConcurrencyKey), so its jobs neither count against nor
   * exhaust caps and rate limits other tenants' jobs use. The HTTP API enqueues a tenant API
   * key's jobs this way; an admin's, as given.
   */
  keySpace?: 'shared' | 'tenant';
}

/** In-process counters, for metrics. Monotonic unless named otherwise. */
export interface EngineStats {
  claimed: number;
  succeeded: number;
  retried: number;
  deadLettered: number;
  /** Jobs this process ran that ended cancelled (their attempt stopped after a cancel request). */
  cancelled: number;
  /** Handlers whose signal this process aborted for a cancel request (by NOTIFY, heartbeat or a local cancel). */
  cancelSignalled: number;
  /** Outcome/heartbeat/mark-running/progress writes that matched no row because the token was stale. */
  fencedWrites: number;
  leasesLost: number;
  reclaimed: number;
  /** Leases found held without this worker knowing (a claim whose reply was lost) and given back, attempt refunded. */
  strandedReleased: number;
  /** Cron: occurrences this process turned into jobs, misfires it found (by policy), schedules it disabled. */
  cron: CronCounters;
  /** Workflow steps executed, completed steps answered from history, and executions resumed by cause. */
  workflows: WorkflowCounters;
  /** Gauges: queue -> { concurrency, inFlight }. */
  slots: Record<string, { concurrency: number; inFlight: number }>;
  /** Whether this worker holds its presence lock (it claims only then); null before start() or with no queues. */
  presenceHeld: boolean | null;
  /** Whether this process holds the leader lease and may act on it; null before start(), false in a process that may not lead. */
  leader: boolean | null;
}

/** The engine createBaton returns: migrate, start, stop, enqueue, the admin, cron, outbox and workflow APIs (docs/library.md). */
export interface Baton {
  readonly config: EngineConfig;
  /** Creates/updates the schema. Safe from many processes at once. */
  migrate(): Promise<MigrateResult>;
  /** Starts claiming (for config.queues), heartbeats, reaper and listener. Idempotent. */
  start(): Promise<void>;
  /** Stops claiming, lets in-flight jobs finish within drainMs, releases unstarted leases (attempt refunded). Idempotent. */
  stop(opts?: { drainMs?: number }): Promise<void>;
  /** Throws BatonError INVALID_ARGUMENT for a bad spec (e.g. NUL bytes, bad names). */
  enqueue(spec: JobSpec, opts?: EnqueueOptions): Promise<EnqueueResult>;
  /** One INSERT statement for the batch; results in input order. */
  enqueueMany(specs: JobSpec[], opts?: EnqueueOptions): Promise<EnqueueResult[]>;
  /** Wakes workers of `queue` (in this process at once, others by NOTIFY). For use after a caller's COMMIT. */
  wake(queue: string): Promise<void>;
  readonly admin: AdminApi;
  /** Schedules: recurring jobs from cron expressions in IANA zones (docs/cron.md). */
  readonly cron: CronApi;
  /**
   * Defines a durable workflow: `fn` runs as the handler of job type `workflow:<name>` (on
   * `opts.queue`), once per execution of a run. Define workflows before start(): the engine
   * records them in the registry of defined workflows then, so any process can start them.
   */
  workflow<I = unknown, O = unknown>(name: string, fn: WorkflowFn<I, O>, opts?: WorkflowOptions): void;
  /** The builder form: `baton.workflow(name).step(a, fn).step(b, fn)`; the run's output is every step's output by key. */
  workflow<I = unknown>(name: string, opts?: WorkflowOptions): WorkflowBuilder<I>;
  /**
   * Starts a run of a workflow defined in this process or in any other on the same database (the
   * registry of defined workflows, written when an engine that defines workflows starts); its
   * driving job goes on the workflow's queue. Throws WORKFLOW_NOT_FOUND for a name never registered.
   */
  startWorkflow(name: string, input?: unknown, opts?: StartRunOptions): Promise<StartRunResult>;
  /** Sends an event to a run: kept until a wait for `name` takes it; a repeated idempotency key is absorbed. */
  sendEvent(runId: string, name: string, payload?: unknown, opts?: { idempotencyKey?: string }): Promise<SendEventResult>;
  /** Runs: reads, cancel and replay. */
  readonly workflows: WorkflowRunsApi;
  readonly events: EventEmitter<EngineEvents>;
  stats(): EngineStats;
  /** The transactional outbox: record messages in your transaction; relays publish them (docs/outbox.md). */
  readonly outbox: OutboxApi;
}
