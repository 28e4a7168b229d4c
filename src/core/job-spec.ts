// Validation of what producers submit, before any SQL runs: names, ranges,
// JSON-safety and NUL bytes (which PostgreSQL text and jsonb reject).

import { z } from 'zod';
import type { NewJob } from '../driver/executor.ts';
import { BatonError } from '../types/errors.ts';
import { DEBOUNCE_MODES, type EnqueueWindow, ID_PATTERN, type JobSpec, ON_PARENT_FAILURE } from '../types/job.ts';
import { nameSchema as name } from './config.ts';
import type { TraceCarrier } from './tracing.ts';

/** Ten years: delays beyond that are almost surely unit mistakes. */
export const DELAY_MS_MAX = 10 * 365 * 24 * 3600 * 1000;
/** Priority runs from -PRIORITY_MAX to PRIORITY_MAX; higher runs first. */
export const PRIORITY_MAX = 1_000_000;
/** The largest `maxAttempts` of a job spec. */
export const MAX_ATTEMPTS_MAX = 1_000;
/** The longest `idempotencyKey` of a job spec, in characters. */
export const IDEMPOTENCY_KEY_MAX_CHARS = 512;
/** The longest `concurrencyKey` of a job spec, in characters. */
export const CONCURRENCY_KEY_MAX_CHARS = 256;
/**
 * Separates a tenant from its own concurrency key in a stored key (see tenantConcurrencyKey).
 * Tenant names cannot contain it (NAME_PATTERN), so the tenant a stored key belongs to is
 * everything before its first `#`, and two tenants' keys never meet.
 */
export const TENANT_KEY_SEPARATOR = '#';

/**
 * The stored name of concurrency key `key` in tenant `tenantId`'s own space (`acme#vendor:x`):
 * what a job enqueued with `keySpace: 'tenant'` (every job a tenant API key sends) is counted
 * under, and the name an admin gives setKeyLimits to cap it (or a prefix: `acme#*`).
 */
export function tenantConcurrencyKey(tenantId: string, key: string): string {
  return `${tenantId}${TENANT_KEY_SEPARATOR}${key}`;
}
/** The largest `concurrencyLimit` of a job spec. */
export const CONCURRENCY_LIMIT_MAX = 1_000_000;
/** Most parents one job may depend on. */
export const DEPENDS_ON_MAX = 100;
/** The longest debounce or throttle key, in characters. */
export const WINDOW_KEY_MAX_CHARS = 256;
/** The longest debounce or throttle window (and maxWaitMs): one week. */
export const DEBOUNCE_WINDOW_MS_MAX = 7 * 24 * 3600 * 1000;
/** The largest throttle `limit`. */
export const THROTTLE_LIMIT_MAX = 1_000_000;
/** A job id as the API spells it: a positive decimal bigint. */
export const jobIdSchema = z.string().regex(ID_PATTERN, 'must be a job id (a positive decimal integer)');
const noNul = (s: string) => !s.includes('\u0000');
const windowKey = z.string().min(1).max(WINDOW_KEY_MAX_CHARS).refine(noNul, 'must not contain NUL bytes');
const windowMs = z.number().int().min(1).max(DEBOUNCE_WINDOW_MS_MAX);

/**
 * True when JSON text (from JSON.stringify) encodes a NUL character, which jsonb refuses.
 * Only an escape preceded by an even run of backslashes is a NUL: `\\u0000` is the
 * harmless six-character text \u0000 behind an escaped backslash.
 */
export function jsonTextHasNul(text: string): boolean {
  return /(?<!\\)(?:\\\\)*\\u0000/.test(text);
}

/**
 * Earliest and latest runAt: the instants with a four-digit UTC year. Past them
 * Date#toISOString writes a six-digit signed year ("+010000-...") that PostgreSQL refuses,
 * and an offset can carry a valid-looking "9999-12-31T23:00:00-01:00" into year 10000.
 */
export const RUN_AT_MIN = '0001-01-01T00:00:00.000Z';
/** The latest `runAt` of a job spec (see RUN_AT_MIN). */
export const RUN_AT_MAX = '9999-12-31T23:59:59.999Z';
const RUN_AT_MIN_MS = Date.parse(RUN_AT_MIN);
const RUN_AT_MAX_MS = Date.parse(RUN_AT_MAX);

/** A job's runAt: a valid Date from RUN_AT_MIN to RUN_AT_MAX. The HTTP edge reuses it. */
export const runAtSchema = z
  .date()
  .refine((d) => !Number.isNaN(d.getTime()), { message: 'must be a valid date', abort: true })
  .refine((d) => d.getTime() >= RUN_AT_MIN_MS && d.getTime() <= RUN_AT_MAX_MS, `must be from ${RUN_AT_MIN} to ${RUN_AT_MAX}`);

/** A debounce rule (JobSpec.debounce, StartRunOptions.debounce). */
export const debounceSchema = z
  .object({
    key: windowKey,
    windowMs: windowMs,
    mode: z.enum(DEBOUNCE_MODES).optional(),
    maxWaitMs: windowMs.optional(),
  })
  .strict()
  .refine((d) => d.maxWaitMs === undefined || d.maxWaitMs >= d.windowMs, {
    message: 'maxWaitMs must be at least windowMs',
    path: ['maxWaitMs'],
  });
/** A throttle rule (JobSpec.throttle, StartRunOptions.throttle). */
export const throttleSchema = z
  .object({ key: windowKey, windowMs: windowMs, limit: z.number().int().min(1).max(THROTTLE_LIMIT_MAX).optional() })
  .strict();

export const jobSpecSchema = z
  .object({
    jobType: name,
    payload: z.unknown().optional(),
    queue: name.optional(),
    tenantId: name.optional(),
    priority: z.number().int().min(-PRIORITY_MAX).max(PRIORITY_MAX).optional(),
    runAt: runAtSchema.optional(),
    delayMs: z.number().int().min(0).max(DELAY_MS_MAX).optional(),
    maxAttempts: z.number().int().min(1).max(MAX_ATTEMPTS_MAX).optional(),
    idempotencyKey: z.string().min(1).max(IDEMPOTENCY_KEY_MAX_CHARS).refine(noNul, 'must not contain NUL bytes').optional(),
    /** Flow control: jobs sharing a key share its caps and rate limits across the fleet. */
    concurrencyKey: z.string().min(1).max(CONCURRENCY_KEY_MAX_CHARS).refine(noNul, 'must not contain NUL bytes').optional(),
    /** This job's own cap on running jobs of its key (needs concurrencyKey). */
    concurrencyLimit: z.number().int().min(1).max(CONCURRENCY_LIMIT_MAX).optional(),
    dependsOn: z.array(jobIdSchema).max(DEPENDS_ON_MAX).optional(),
    onParentFailure: z.enum(ON_PARENT_FAILURE).optional(),
    debounce: debounceSchema.optional(),
    throttle: throttleSchema.optional(),
  })
  .strict()
  .refine((s) => s.concurrencyLimit === undefined || s.concurrencyKey !== undefined, {
    message: 'concurrencyLimit needs a concurrencyKey',
    path: ['concurrencyLimit'],
  })
  .refine((s) => !(s.runAt !== undefined && s.delayMs !== undefined), {
    message: 'runAt and delayMs are mutually exclusive',
    path: ['delayMs'],
  })
  .refine((s) => s.onParentFailure === undefined || (s.dependsOn?.length ?? 0) > 0, {
    message: 'onParentFailure needs dependsOn',
    path: ['onParentFailure'],
  })
  .superRefine(refineWindow);

/**
 * The combinations a debounce or throttle refuses (shared with the HTTP schemas and a workflow
 * start's options): both at once; an idempotency key or parents (the key's lock decides what an
 * enqueue creates); a trailing debounce's own runAt or delayMs (its window sets run_at).
 */
export function refineWindow(
  s: Pick<JobSpec, 'debounce' | 'throttle' | 'idempotencyKey' | 'dependsOn' | 'runAt' | 'delayMs'> & { runAt?: unknown },
  ctx: z.RefinementCtx,
): void {
  const rule = s.debounce ? 'debounce' : s.throttle ? 'throttle' : null;
  if (!rule) return;
  const refuse = (field: string, message: string) => ctx.addIssue({ code: 'custom', path: [field], message });
  if (s.debounce && s.throttle) refuse('throttle', 'debounce and throttle are mutually exclusive');
  if (s.idempotencyKey !== undefined) refuse('idempotencyKey', `idempotencyKey cannot be combined with ${rule}`);
  if (s.dependsOn !== undefined) refuse('dependsOn', `dependsOn cannot be combined with ${rule}`);
  if (s.debounce && (s.debounce.mode ?? 'trailing') === 'trailing') {
    if (s.runAt !== undefined) refuse('runAt', 'a trailing debounce sets run_at from its window: runAt cannot be given');
    if (s.delayMs !== undefined) refuse('delayMs', 'a trailing debounce sets run_at from its window: delayMs cannot be given');
  }
}

/** The stored rule of a spec's (or a start's) debounce or throttle (validated), or undefined. */
export function windowOf(s: Pick<JobSpec, 'debounce' | 'throttle'>): EnqueueWindow | undefined {
  if (s.debounce) {
    const { key, windowMs, mode, maxWaitMs } = s.debounce;
    return { kind: 'debounce', key, windowMs, mode: mode ?? 'trailing', maxWaitMs: maxWaitMs ?? null };
  }
  if (s.throttle) return { kind: 'throttle', key: s.throttle.key, windowMs: s.throttle.windowMs, limit: s.throttle.limit ?? 1 };
  return undefined;
}

/** Validates and defaults one spec; throws BatonError INVALID_ARGUMENT naming the field. */
export function normalizeSpec(spec: JobSpec, maxAttemptsDefault: number, index?: number, traceContext: TraceCarrier | null = null): NewJob {
  const parsed = jobSpecSchema.safeParse(spec);
  const where = index === undefined ? '' : `jobs[${index}].`;
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${where}${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new BatonError('INVALID_ARGUMENT', `invalid job: ${issues.join('; ')}`, { details: issues });
  }
  const s = parsed.data;
  let payloadText: string | undefined;
  try {
    payloadText = JSON.stringify(s.payload ?? null);
  } catch (err) {
    throw new BatonError('INVALID_ARGUMENT', `invalid job: ${where}payload: not JSON-serialisable`, { cause: err });
  }
  // JSON.stringify escapes NUL as \u0000, which jsonb refuses.
  if (payloadText === undefined || jsonTextHasNul(payloadText)) {
    throw new BatonError('INVALID_ARGUMENT', `invalid job: ${where}payload: must be JSON without NUL (\\u0000) characters`);
  }
  return {
    tenantId: s.tenantId ?? 'default',
    queue: s.queue ?? 'default',
    jobType: s.jobType,
    payload: s.payload ?? null,
    priority: s.priority ?? 0,
    runAt: s.runAt ? s.runAt.toISOString() : null,
    delayMs: s.runAt ? null : (s.delayMs ?? 0),
    maxAttempts: s.maxAttempts ?? maxAttemptsDefault,
    idempotencyKey: s.idempotencyKey ?? null,
    traceContext,
    concurrencyKey: s.concurrencyKey ?? null,
    concurrencyLimit: s.concurrencyLimit ?? null,
    ...(windowOf(s) ? { window: windowOf(s) } : {}),
    // Each parent once, in id order (an edge per parent).
    ...(s.dependsOn && s.dependsOn.length > 0
      ? {
          dependsOn: [...new Set(s.dependsOn)].sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0)),
          onParentFailure: s.onParentFailure ?? 'cancel',
        }
      : {}),
  };
}
