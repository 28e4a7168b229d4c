// Baton's public library API: re-exports only.

export { createBaton, type BatonOptions } from './create-baton.ts';
export type { Baton, EnqueueOptions, EngineStats } from './core/baton.ts';
export {
  DLQ_REPLAY_LIMIT_DEFAULT,
  DLQ_REPLAY_LIMIT_MAX,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  LIST_OFFSET_MAX,
  isJobId,
  HEALTH_CACHE_MS,
  type AdminApi,
  type DatabaseHealth,
  type JobPage,
  type ListJobsFilter,
  type StateCounts,
  type WorkerInfo,
} from './core/admin.ts';
export {
  BULK_ACTIONS,
  BULK_IDS_MAX,
  STATS_WINDOW_SECONDS_DEFAULT,
  STATS_WINDOW_SECONDS_MAX,
  type BulkAction,
  type BulkItemResult,
  type PausedQueue,
  type QueuePauseState,
  type StatsSnapshot,
} from './core/queue-admin.ts';
export { JOB_SORT_KEYS, JOB_SORT_WINDOW, SORT_ORDERS, type JobSortKey, type SortOrder } from './types/job-sort.ts';
export type { EngineEvents } from './core/events.ts';
export type { CronApi } from './core/cron/api.ts';
export { PREVIEW_COUNT_MAX, SCHEDULE_LIST_MAX } from './core/cron/api.ts';
export type { CronCounters } from './core/cron/service.ts';
export type { FireInstant } from './core/cron/expression.ts';
export {
  MISFIRE_POLICIES,
  CATCH_UP_LIMIT_DEFAULT,
  CATCH_UP_LIMIT_MAX,
  type MisfirePolicy,
  type Schedule,
  type ScheduleInput,
  type SchedulePatch,
  type ScheduleStatus,
} from './types/schedule.ts';
export type { Handler, HandlerMap, JobContext } from './core/handler.ts';
export type { Logger } from './core/logger.ts';
export type { Clock } from './core/clock.ts';
export {
  JOB_STATES,
  ON_PARENT_FAILURE,
  type OnParentFailure,
  type WaitingJob,
  TERMINAL_STATES,
  isTerminalState,
  LIST_INLINE_MAX_BYTES,
  ATTEMPT_ERROR_KINDS,
  ENQUEUE_WARNING_CODES,
  type AttemptError,
  type AttemptErrorKind,
  type EnqueueResult,
  type EnqueueWarning,
  type EnqueueWarningCode,
  type Job,
  type JobSpec,
  type JobState,
  type JobSummary,
  type LeasedJob,
  type PendingJob,
  type SucceededJob,
  type DeadLetteredJob,
  type CancelledJob,
} from './types/job.ts';
export {
  BatonError,
  TerminalError,
  LeaseLostError,
  JobCancelledError,
  NonDeterminismError,
  ERROR_CODES,
  isBatonError,
  type ErrorCode,
} from './types/errors.ts';
export { StepFailedError, type WorkflowCounters } from './core/workflow/execution.ts';
export { WORKFLOW_JOB_TYPE_PREFIX } from './core/workflow/service.ts';
export type { BuilderStepContext, WorkflowBuilder } from './core/workflow/builder.ts';
export {
  RUN_STATES,
  STEP_KINDS,
  type ChildResult,
  type ChildSpec,
  STEP_STATUSES,
  type ListRunsFilter,
  type RunDetail,
  type RunState,
  type RunSummary,
  type SendEventResult,
  type StartRunOptions,
  type StartRunResult,
  type StepContext,
  type StepInfo,
  type StepKind,
  type StepStatus,
  type WorkflowContext,
  type WorkflowEvent,
  type WorkflowFn,
  type WorkflowOptions,
} from './types/workflow.ts';
export {
  engineConfigSchema,
  parseEngineConfig,
  NAME_PATTERN,
  nameSchema,
  type EngineConfig,
  type EngineConfigInput,
} from './core/config.ts';
export {
  DELAY_MS_MAX,
  DEPENDS_ON_MAX,
  jobIdSchema,
  IDEMPOTENCY_KEY_MAX_CHARS,
  CONCURRENCY_KEY_MAX_CHARS,
  CONCURRENCY_LIMIT_MAX,
  TENANT_KEY_SEPARATOR,
  tenantConcurrencyKey,
  MAX_ATTEMPTS_MAX,
  PRIORITY_MAX,
  RUN_AT_MIN,
  RUN_AT_MAX,
  runAtSchema,
} from './core/job-spec.ts';
export { migrate, type MigrateOptions, type MigrateResult } from './db/migrate.ts';
export { isInvalidInputSqlstate } from './db/pg/errors.ts';
export { PACKAGE_VERSION } from './version.ts';
export { traceCarrier, type TraceCarrier } from './core/tracing.ts';
export {
  OUTBOX_STATES,
  DEAD_LETTER_REASONS,
  OUTBOX_MAX_ATTEMPTS_DEFAULT,
  RECORD_BATCH_MAX,
  type DeadLetterReason,
  type OutboxError,
  type OutboxMessage,
  type OutboxMessageInput,
  type OutboxState,
  type RecordResult,
} from './core/outbox/message.ts';
export {
  OUTBOX_LIST_LIMIT_DEFAULT,
  OUTBOX_LIST_LIMIT_MAX,
  OUTBOX_LIST_OFFSET_MAX,
  OUTBOX_REPLAY_LIMIT_DEFAULT,
  OUTBOX_REPLAY_LIMIT_MAX,
  isOutboxId,
  type ListOutboxFilter,
  type OutboxApi,
  type OutboxStats,
  type RecordOptions,
} from './core/outbox/service.ts';
export type { RelayConfigInput } from './core/outbox/config.ts';
export type { RelayCounters, RelayEvents } from './core/outbox/relay.ts';
export { PublishError, type Publisher, type PublisherMap, type PublishMessage } from './core/outbox/publisher.ts';
export type { OutboxOptions } from './create-baton.ts';
export { webhookPublisher, parseRetryAfter, type WebhookOptions } from './publishers/webhook.ts';
export {
  verifyWebhookSignature,
  signWebhook,
  generateWebhookSecret,
  webhookMessageId,
  webhookSecretKey,
  WEBHOOK_ID_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_SECRET_PREFIX,
  SIGNATURE_TOLERANCE_SECONDS_DEFAULT,
  type VerifyWebhookInput,
} from './publishers/signature.ts';
export { rabbitmqPublisher, type RabbitmqOptions } from './publishers/rabbitmq.ts';
export { natsPublisher, type NatsOptions } from './publishers/nats.ts';
export { openApiKeys, type ApiKeysOptions, type ClosableApiKeys } from './open-api-keys.ts';
export {
  API_KEY_ROLES,
  API_KEY_CACHE_MS_DEFAULT,
  looksLikeApiKey,
  type ApiKeys,
  type ApiKeyRecord,
  type ApiKeyRole,
  type CreateKeyInput,
  type KeyRefusal,
  type VerifyResult,
} from './core/api-keys.ts';
export type { Fairness } from './core/flow.ts';
export type { FlowAdminApi, FlowKeyState, FlowLimits, FlowQueueState, FlowSnapshot, RateLimit } from './core/flow-admin.ts';
export { FLOW_SNAPSHOT_GROUPS_MAX, RATE_PERIOD_MS_MAX, TENANT_WEIGHT_MAX } from './core/flow-admin.ts';
