// Baton's public library API: re-exports only.

export {
  type AdminApi,
  type DatabaseHealth,
  DLQ_REPLAY_LIMIT_DEFAULT,
  DLQ_REPLAY_LIMIT_MAX,
  HEALTH_CACHE_MS,
  isJobId,
  type JobPage,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  LIST_OFFSET_MAX,
  type ListJobsFilter,
  type StateCounts,
  type WorkerInfo,
} from './core/admin.ts';
export {
  API_KEY_CACHE_MS_DEFAULT,
  API_KEY_ROLES,
  type ApiKeyRecord,
  type ApiKeyRole,
  type ApiKeys,
  type CreateKeyInput,
  type KeyRefusal,
  looksLikeApiKey,
  type VerifyResult,
} from './core/api-keys.ts';
export type { Baton, EngineStats, EnqueueOptions } from './core/baton.ts';
export type { Clock } from './core/clock.ts';
export {
  type EngineConfig,
  type EngineConfigInput,
  engineConfigSchema,
  NAME_PATTERN,
  nameSchema,
  parseEngineConfig,
} from './core/config.ts';
export type { CronApi } from './core/cron/api.ts';
export { PREVIEW_COUNT_MAX, SCHEDULE_LIST_MAX } from './core/cron/api.ts';
export type { FireInstant } from './core/cron/expression.ts';
export type { CronCounters } from './core/cron/service.ts';
export type { EngineEvents } from './core/events.ts';
export type { Fairness } from './core/flow.ts';
export type { FlowAdminApi, FlowKeyState, FlowLimits, FlowQueueState, FlowSnapshot, RateLimit } from './core/flow-admin.ts';
export { FLOW_SNAPSHOT_GROUPS_MAX, RATE_PERIOD_MS_MAX, TENANT_WEIGHT_MAX } from './core/flow-admin.ts';
export type { Handler, HandlerMap, JobContext } from './core/handler.ts';
export {
  CONCURRENCY_KEY_MAX_CHARS,
  CONCURRENCY_LIMIT_MAX,
  DELAY_MS_MAX,
  DEPENDS_ON_MAX,
  IDEMPOTENCY_KEY_MAX_CHARS,
  jobIdSchema,
  MAX_ATTEMPTS_MAX,
  PRIORITY_MAX,
  RUN_AT_MAX,
  RUN_AT_MIN,
  runAtSchema,
  TENANT_KEY_SEPARATOR,
  tenantConcurrencyKey,
} from './core/job-spec.ts';
export type { Logger } from './core/logger.ts';
export type { RelayConfigInput } from './core/outbox/config.ts';
export {
  DEAD_LETTER_REASONS,
  type DeadLetterReason,
  OUTBOX_MAX_ATTEMPTS_DEFAULT,
  OUTBOX_STATES,
  type OutboxError,
  type OutboxMessage,
  type OutboxMessageInput,
  type OutboxState,
  RECORD_BATCH_MAX,
  type RecordResult,
} from './core/outbox/message.ts';
export { PublishError, type Publisher, type PublisherMap, type PublishMessage } from './core/outbox/publisher.ts';
export type { RelayCounters, RelayEvents } from './core/outbox/relay.ts';
export {
  isOutboxId,
  type ListOutboxFilter,
  OUTBOX_LIST_LIMIT_DEFAULT,
  OUTBOX_LIST_LIMIT_MAX,
  OUTBOX_LIST_OFFSET_MAX,
  OUTBOX_REPLAY_LIMIT_DEFAULT,
  OUTBOX_REPLAY_LIMIT_MAX,
  type OutboxApi,
  type OutboxStats,
  type RecordOptions,
} from './core/outbox/service.ts';
export {
  BULK_ACTIONS,
  BULK_IDS_MAX,
  type BulkAction,
  type BulkItemResult,
  type PausedQueue,
  type QueuePauseState,
  STATS_WINDOW_SECONDS_DEFAULT,
  STATS_WINDOW_SECONDS_MAX,
  type StatsSnapshot,
} from './core/queue-admin.ts';
export { type TraceCarrier, traceCarrier } from './core/tracing.ts';
export type { BuilderStepContext, WorkflowBuilder } from './core/workflow/builder.ts';
export { StepFailedError, type WorkflowCounters } from './core/workflow/execution.ts';
export { WORKFLOW_JOB_TYPE_PREFIX } from './core/workflow/service.ts';
export { type ApiKeysOptions, type ClosableApiKeys, openApiKeys } from './create-api-keys.ts';
export type { OutboxOptions } from './create-baton.ts';
export { type BatonOptions, createBaton } from './create-baton.ts';
export { type MigrateOptions, type MigrateResult, migrate } from './db/migrate.ts';
export { isInvalidInputSqlstate } from './db/pg/errors.ts';
export { type NatsOptions, natsPublisher } from './publishers/nats.ts';
export { type RabbitmqOptions, rabbitmqPublisher } from './publishers/rabbitmq.ts';
export {
  generateWebhookSecret,
  SIGNATURE_TOLERANCE_SECONDS_DEFAULT,
  signWebhook,
  type VerifyWebhookInput,
  verifyWebhookSignature,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SECRET_PREFIX,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  webhookMessageId,
  webhookSecretKey,
} from './publishers/signature.ts';
export { parseRetryAfter, type WebhookOptions, webhookPublisher } from './publishers/webhook.ts';
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
  type DeadLetteredJob,
  ENQUEUE_WARNING_CODES,
  type EnqueueResult,
  type EnqueueWarning,
  type EnqueueWarningCode,
  isTerminalState,
  JOB_STATES,
  type Job,
  type JobSpec,
  type JobState,
  type JobSummary,
  type LeasedJob,
  LIST_INLINE_MAX_BYTES,
  ON_PARENT_FAILURE,
  type OnParentFailure,
  type PendingJob,
  type SucceededJob,
  TERMINAL_STATES,
  type WaitingJob,
} from './types/job.ts';
export { JOB_SORT_KEYS, JOB_SORT_WINDOW, type JobSortKey, SORT_ORDERS, type SortOrder } from './types/job-sort.ts';
export {
  CATCH_UP_LIMIT_DEFAULT,
  CATCH_UP_LIMIT_MAX,
  MISFIRE_POLICIES,
  type MisfirePolicy,
  type Schedule,
  type ScheduleInput,
  type SchedulePatch,
  type ScheduleStatus,
} from './types/schedule.ts';
export {
  type ChildResult,
  type ChildSpec,
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
  type WorkflowContext,
  type WorkflowEvent,
  type WorkflowFn,
  type WorkflowOptions,
} from './types/workflow.ts';
export { PACKAGE_VERSION } from './version.ts';
