// Engine options: one zod schema, named defaults with units, cross-field rules
// that name the fields. Parsed once; the result is frozen.

import { z } from 'zod';
import { isValidSchemaName } from '../driver/schema-name.ts';
import { BatonError } from '../types/errors.ts';

export const SCHEMA_DEFAULT = 'baton';
export const LEASE_MS_DEFAULT = 5_000;
export const POLL_INTERVAL_MS_DEFAULT = 1_000;
export const NOTIFY_DEBOUNCE_MS_DEFAULT = 5;
export const REAPER_INTERVAL_MS_DEFAULT = 250;
export const REAPER_BATCH_SIZE_DEFAULT = 500;
export const FAST_RECLAIM_GRACE_MS_DEFAULT = 500;
export const DRAIN_MS_DEFAULT = 10_000;
export const MAX_ATTEMPTS_DEFAULT = 5;
export const BACKOFF_BASE_MS_DEFAULT = 1_000;
export const BACKOFF_CAP_MS_DEFAULT = 10 * 60_000;
export const COMPLETER_MAX_BATCH_DEFAULT = 500;
export const QUERY_TIMEOUT_MS_DEFAULT = 10_000;
const DAY_MS = 24 * 3600 * 1000;
/** How long finished jobs are kept, per state (ms; 0: deleted by the next sweep; null: kept). */
export const RETENTION_DEFAULT = Object.freeze({ succeededMs: DAY_MS, cancelledMs: 7 * DAY_MS, deadLetteredMs: 30 * DAY_MS });
export const RETENTION_INTERVAL_MS_DEFAULT = 5_000;
export const RETENTION_BATCH_SIZE_DEFAULT = 1_000;
export const CRON_MISFIRE_THRESHOLD_MS_DEFAULT = 10_000;
export const VACUUM_DEAD_TUPLES_DEFAULT = 200_000;
export const LEADER_LEASE_MS_DEFAULT = 5_000;

/**
 * Queue, job-type and tenant names: 1-128 chars of [A-Za-z0-9_.:-/], no whitespace, and no
 * empty "/"-separated segment (no leading, trailing or doubled "/"): clients and proxies
 * collapse or strip such slashes, so a name like "a//b" or "/" could not be addressed in a URL.
 */
export const NAME_PATTERN = /^(?=.{1,128}$)[A-Za-z0-9_.:-]+(?:\/[A-Za-z0-9_.:-]+)*$/;

/** A name checked against NAME_PATTERN, with the message every place that checks one shows. */
export const nameSchema = z
  .string()
  .regex(NAME_PATTERN, 'must be 1-128 chars of [A-Za-z0-9_.:-/] with no empty segment (no leading, trailing or double /)');
const positiveMs = z.number().int().positive();
const fairnessSchema = z.enum(['tenant', 'none']);

export const engineConfigSchema = z
  .object({
    schema: z.string().refine(isValidSchemaName, 'must match ^[a-z_][a-z0-9_]{0,62}$ and not start with pg_').default(SCHEMA_DEFAULT),
    /** Queue name -> concurrency (free slots) on this process. Empty: this process only produces. */
    queues: z.record(nameSchema, z.number().int().min(1).max(10_000)).default({}),
    dispatch: z.enum(['notify', 'poll']).default('notify'),
    /**
     * How a queue's claims order jobs: 'tenant' (default) is a weighted round-robin across
     * tenants, priority ordering jobs within each; 'none' is FIFO (claim order) across the
     * queue. One value for every queue, or per queue (queues not named get 'tenant').
     */
    fairness: z.union([fairnessSchema, z.record(nameSchema, fairnessSchema)]).default('tenant'),
    claimIntoRunning: z.boolean().default(true),
    /** Claims on Baton's own pool skip their WAL flush, behind a durable token floor (docs/how-it-works.md). */
    asyncClaims: z.boolean().default(true),
    leaseMs: positiveMs.min(100).default(LEASE_MS_DEFAULT),
    /** Heartbeat period; defaults to leaseMs / 3. */
    heartbeatMs: positiveMs.optional(),
    pollIntervalMs: positiveMs.default(POLL_INTERVAL_MS_DEFAULT),
    notifyDebounceMs: z.number().int().min(0).default(NOTIFY_DEBOUNCE_MS_DEFAULT),
    reaperIntervalMs: positiveMs.default(REAPER_INTERVAL_MS_DEFAULT),
    reaperBatchSize: z.number().int().min(1).max(100_000).default(REAPER_BATCH_SIZE_DEFAULT),
    /**
     * Run maintenance in this process: sweep expired leases (on the leader every
     * reaperIntervalMs, on the others now and then) and, with `leader`, stand for election.
     * false: no maintenance here at all, and never the leader. Safe in any number of processes
     * (SKIP LOCKED + fencing).
     */
    reaper: z.boolean().default(true),
    /**
     * May this process be elected leader (with reaper: true), whether or not it works queues: the
     * leader runs the cron ticker, retention (jobs and outbox), the vacuum trigger and worker
     * pruning, and sweeps expired leases every reaperIntervalMs. false: it never leads.
     */
    leader: z.boolean().default(true),
    /**
     * The leader's lease (database time): renewed every leaderLeaseMs / 10; the holder acts only
     * for 0.8 x leaderLeaseMs after sending its last successful renewal, and another process takes
     * over within about one lease of the holder's last renewal (at once when its session is gone).
     */
    leaderLeaseMs: positiveMs.min(200).max(3_600_000).default(LEADER_LEASE_MS_DEFAULT),
    /** Age (ms) after which finished jobs are deleted, per state; 0 = at the next sweep; null = keep. */
    retention: z
      .object({
        succeededMs: z.number().int().min(0).nullable().default(RETENTION_DEFAULT.succeededMs),
        cancelledMs: z.number().int().min(0).nullable().default(RETENTION_DEFAULT.cancelledMs),
        deadLetteredMs: z.number().int().min(0).nullable().default(RETENTION_DEFAULT.deadLetteredMs),
      })
      .strict()
      .prefault({}),
    retentionIntervalMs: positiveMs.default(RETENTION_INTERVAL_MS_DEFAULT),
    retentionBatchSize: z.number().int().min(1).max(100_000).default(RETENTION_BATCH_SIZE_DEFAULT),
    /**
     * The leader vacuums the jobs table once it holds this many dead row versions (checked every
     * retentionIntervalMs, and after each sweep), whether or not autovacuum runs: claims walk the
     * claim index's dead entries until a vacuum removes them. null = leave it to autovacuum.
     */
    vacuumDeadTuples: z.number().int().min(1_000).nullable().default(VACUUM_DEAD_TUPLES_DEFAULT),
    /**
     * Delete a job when it succeeds, in the completing statement, instead of keeping it as
     * succeeded (its result is not stored). For users who keep no history of successes.
     */
    deleteOnSuccess: z.boolean().default(false),
    /**
     * A schedule occurrence older than this when the ticker reaches it was missed (nothing was
     * ticking), and its schedule's misfire policy decides whether it fires. Younger ones always fire.
     */
    cronMisfireThresholdMs: z.number().int().min(0).default(CRON_MISFIRE_THRESHOLD_MS_DEFAULT),
    fastReclaim: z.boolean().default(true),
    fastReclaimGraceMs: z.number().int().min(0).default(FAST_RECLAIM_GRACE_MS_DEFAULT),
    drainMs: z.number().int().min(0).default(DRAIN_MS_DEFAULT),
    maxAttemptsDefault: z.number().int().min(1).max(1_000).default(MAX_ATTEMPTS_DEFAULT),
    backoffBaseMs: positiveMs.default(BACKOFF_BASE_MS_DEFAULT),
    backoffCapMs: positiveMs.default(BACKOFF_CAP_MS_DEFAULT),
    completerMaxBatch: z.number().int().min(1).max(10_000).default(COMPLETER_MAX_BATCH_DEFAULT),
    /**
     * After this long without a successful heartbeat round trip, the worker stops writing
     * outcomes it can no longer prove it owns and aborts its handlers. Defaults to 0.8 x leaseMs.
     */
    heartbeatDeadlineMs: positiveMs.optional(),
    /** Identifier of this worker process in lease_owner; generated when absent. */
    workerId: z.string().min(1).max(200).optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    const hb = c.heartbeatMs ?? Math.floor(c.leaseMs / 3);
    if (hb >= c.leaseMs) {
      ctx.addIssue({ code: 'custom', path: ['heartbeatMs'], message: 'heartbeatMs must be less than leaseMs' });
    }
    if (c.backoffCapMs < c.backoffBaseMs) {
      ctx.addIssue({ code: 'custom', path: ['backoffCapMs'], message: 'backoffCapMs must be at least backoffBaseMs' });
    }
    if (c.heartbeatDeadlineMs !== undefined && c.heartbeatDeadlineMs > c.leaseMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['heartbeatDeadlineMs'],
        message: 'heartbeatDeadlineMs must not exceed leaseMs (a worker must stop before its lease can expire)',
      });
    }
  });

/** The engine's own options (queues, leases, polling, retention, ...), as BatonOptions takes them (docs/configuration.md). */
export type EngineConfigInput = z.input<typeof engineConfigSchema>;
/** The validated, frozen engine options, defaults filled in: `baton.config`. */
export type EngineConfig = Readonly<
  Omit<z.output<typeof engineConfigSchema>, 'heartbeatMs' | 'heartbeatDeadlineMs' | 'workerId'> & {
    heartbeatMs: number;
    heartbeatDeadlineMs: number;
    workerId: string;
    /** True when workerId was generated for this engine (so no other process ever used it). */
    workerIdGenerated: boolean;
  }
>;

/** Validates engine options; throws BatonError('INVALID_CONFIG') naming every bad field. */
export function parseEngineConfig(input: unknown, defaultWorkerId: () => string): EngineConfig {
  const parsed = engineConfigSchema.safeParse(input ?? {});
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new BatonError('INVALID_CONFIG', `invalid Baton options: ${issues.join('; ')}`, { details: issues });
  }
  const c = parsed.data;
  return Object.freeze({
    ...c,
    queues: Object.freeze({ ...c.queues }),
    heartbeatMs: c.heartbeatMs ?? Math.max(1, Math.floor(c.leaseMs / 3)),
    heartbeatDeadlineMs: c.heartbeatDeadlineMs ?? Math.floor(c.leaseMs * 0.8),
    workerId: c.workerId ?? defaultWorkerId(),
    workerIdGenerated: c.workerId === undefined,
  });
}

/** The fairness a queue's claims use on this engine. */
export function fairnessOf(config: Pick<EngineConfig, 'fairness'>, queue: string): 'tenant' | 'none' {
  return typeof config.fairness === 'string' ? config.fairness : (config.fairness[queue] ?? 'tenant');
}
