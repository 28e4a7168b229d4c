// Baton's public library API (`baton-queue`): re-exports only. Each name here is public and
// recorded in api/baton-queue.api.md; limits, defaults and helpers the HTTP edge or the
// daemon need are imported from their own modules instead (docs/testing.md, The public API).

/**
 * Baton, a durable job queue for Node.js on PostgreSQL: the engine (createBaton), its types,
 * errors and publishers. The typed HTTP client is the `baton-queue/client` entry.
 *
 * @packageDocumentation
 */

export {
  type AdminApi,
  type DatabaseHealth,
  DLQ_REPLAY_LIMIT_MAX,
  type JobPage,
  LIST_LIMIT_MAX,
  LIST_OFFSET_MAX,
  type ListJobsFilter,
  type StateCounts,
  type WorkerInfo,
} from './core/admin.ts';
export {
  API_KEY_CACHE_MS_DEFAULT,
  type ApiKeyRecord,
  type ApiKeyRole,
  type ApiKeys,
  type CreateKeyInput,
  type KeyRefusal,
  type VerifyResult,
} from './core/api-keys.ts';
export type { Baton, EngineStats, EnqueueOptions } from './core/baton.ts';
export type { Clock } from './core/clock.ts';
export type { EngineConfig, EngineConfigInput } from './core/config.ts';
export type { CronApi } from './core/cron/api.ts';
export type { FireInstant } from './core/cron/expression.ts';
export type { CronCounters } from './core/cron/service.ts';
export type { EngineEvents } from './core/events.ts';
export type { Fairness } from './core/flow-control.ts';
export type { FlowAdminApi, FlowKeyState, FlowLimits, FlowQueueState, FlowSnapshot, RateLimit } from './core/flow-control-admin.ts';
export type { Handler, HandlerMap, JobContext } from './core/handler.ts';
export {
  CONCURRENCY_KEY_MAX_CHARS,
  CONCURRENCY_LIMIT_MAX,
  DEBOUNCE_WINDOW_MS_MAX,
  DELAY_MS_MAX,
  DEPENDS_ON_MAX,
  IDEMPOTENCY_KEY_MAX_CHARS,
  MAX_ATTEMPTS_MAX,
  PRIORITY_MAX,
  RUN_AT_MAX,
  RUN_AT_MIN,
  tenantConcurrencyKey,
} from './core/job-spec.ts';
export type { Logger } from './core/logger.ts';
export type { RelayConfigInput } from './core/outbox/config.ts';
export {
  DEAD_LETTER_REASONS,
  type DeadLetterReason,
  OUTBOX_STATES,
  type OutboxError,
  type OutboxMessage,
  type OutboxMessageInput,
  type OutboxState,
  type RecordResult,
} from './core/outbox/message.ts';
export { PublishError, type Publisher, type PublisherMap, type PublishMessage } from './core/outbox/publisher.ts';
export type { RelayCounters, RelayEvents } from './core/outbox/relay.ts';
export type { ListOutboxFilter, OutboxApi, OutboxPage, OutboxStats, RecordOptions } from './core/outbox/service.ts';
export {
  BULK_ACTIONS,
  type BulkAction,
  type BulkItemResult,
  type PausedQueue,
  type QueuePauseState,
  type StatsSnapshot,
} from './core/queue-admin.ts';
export type { ShardRouting } from './core/sharding/routing.ts';
export type { ShardedBaton } from './core/sharding/sharded-baton.ts';
export { type TraceCarrier, traceCarrier } from './core/tracing.ts';
export type { BuilderStepContext, WorkflowBuilder } from './core/workflow/builder.ts';
export type { WorkflowCounters } from './core/workflow/execution.ts';
export { StepFailedError } from './core/workflow/outcome.ts';
export { type ApiKeysOptions, type ClosableApiKeys, openApiKeys } from './create-api-keys.ts';
export { type BatonOptions, createBaton, type OutboxOptions } from './create-baton.ts';
export { createShardedBaton, type ShardedBatonOptions } from './create-sharded-baton.ts';
export { type MigrateOptions, type MigrateResult, migrate } from './db/migrate.ts';
export type { PoolerMode } from './db/pg/open-pool.ts';
export { type NatsOptions, natsPublisher } from './publishers/nats.ts';
export { type RabbitmqOptions, rabbitmqPublisher } from './publishers/rabbitmq.ts';
export { generateWebhookSecret, signWebhook, type VerifyWebhookInput, verifyWebhookSignature } from './publishers/signature.ts';
export { type WebhookOptions, webhookPublisher } from './publishers/webhook.ts';
export {
  BatonError,
  ERROR_CODES,
  type ErrorCode,
  isBatonError,
  JobCancelledError,
  LeaseLostError,
  NonDeterminismError,
  TerminalError,
} from './types/errors.ts';
export {
  ATTEMPT_ERROR_KINDS,
  type AttemptError,
  type AttemptErrorKind,
  type CancelledJob,
  DEBOUNCE_MODES,
  type DeadLetteredJob,
  type DebounceMode,
  type DebounceOptions,
  ENQUEUE_WARNING_CODES,
  type EnqueueResult,
  type EnqueueWarning,
  type EnqueueWarningCode,
  type EnqueueWindow,
  JOB_STATES,
  type Job,
  type JobProgress,
  type JobSpec,
  type JobState,
  type JobSummary,
  type LeasedJob,
  LIST_INLINE_MAX_BYTES,
  ON_PARENT_FAILURE,
  type OnParentFailure,
  type PendingJob,
  PROGRESS_MAX_BYTES,
  type SucceededJob,
  TERMINAL_STATES,
  type TerminalState,
  type ThrottleOptions,
  type WaitingJob,
} from './types/job.ts';
export { JOB_SORT_KEYS, JOB_SORT_WINDOW, type JobSortKey, SORT_ORDERS, type SortOrder } from './types/job-sort.ts';
export {
  MISFIRE_POLICIES,
  type MisfirePolicy,
  type Schedule,
  type ScheduleInput,
  type ScheduleJobTarget,
  type SchedulePatch,
  type ScheduleStatus,
  type ScheduleTiming,
  type ScheduleWorkflowTarget,
} from './types/schedule.ts';
export {
  type BlockedReason,
  type ChildResult,
  type ChildSpec,
  type InputSchema,
  type ListRunsFilter,
  RUN_STATES,
  type RunDetail,
  type RunState,
  type RunSummary,
  type SendEventResult,
  STEP_KINDS,
  STEP_STATUSES,
  type StartRunOptions,
  type StartRunResult,
  type StepContext,
  type StepInfo,
  type StepKind,
  type StepStatus,
  type WaitForEventOptions,
  type WorkflowContext,
  type WorkflowEvent,
  type WorkflowFn,
  type WorkflowOptions,
  type WorkflowRunsApi,
} from './types/workflow.ts';
