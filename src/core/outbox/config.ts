// Outbox relay options: one zod schema with named defaults (ms units), parsed once.

import { z } from 'zod';
import { BatonError } from '../../types/errors.ts';
import { OUTBOX_MAX_ATTEMPTS_DEFAULT, OUTBOX_MAX_ATTEMPTS_MAX } from './message.ts';

export const RELAY_BATCH_SIZE_DEFAULT = 100;
export const VISIBILITY_MS_DEFAULT = 30_000;
export const PUBLISH_TIMEOUT_MS_DEFAULT = 10_000;
export const OUTBOX_POLL_INTERVAL_MS_DEFAULT = 1_000;
export const OUTBOX_BACKOFF_BASE_MS_DEFAULT = 1_000;
export const OUTBOX_BACKOFF_CAP_MS_DEFAULT = 10 * 60_000;
const DAY_MS = 24 * 3600 * 1000;
export const OUTBOX_RETENTION_DEFAULT = Object.freeze({ publishedMs: DAY_MS, deadLetteredMs: 30 * DAY_MS });
export const OUTBOX_RETENTION_INTERVAL_MS_DEFAULT = 10_000;
export const OUTBOX_PURGE_BATCH_DEFAULT = 1_000;

const ms = (max: number) => z.number().int().min(1).max(max);

export const relayConfigSchema = z
  .object({
    /** Messages one claim takes (published side by side, outcomes written in two statements). */
    batchSize: z.number().int().min(1).max(10_000).default(RELAY_BATCH_SIZE_DEFAULT),
    /** How long a claimed message stays invisible to other relays: must outlast a publish. */
    visibilityMs: ms(DAY_MS).default(VISIBILITY_MS_DEFAULT),
    /** Deadline of one publish; a publish past it counts as failed (and is retried). */
    publishTimeoutMs: ms(DAY_MS).default(PUBLISH_TIMEOUT_MS_DEFAULT),
    /** Fallback poll period (a NOTIFY wakes the relay sooner). */
    pollIntervalMs: ms(DAY_MS).default(OUTBOX_POLL_INTERVAL_MS_DEFAULT),
    backoffBaseMs: ms(DAY_MS).default(OUTBOX_BACKOFF_BASE_MS_DEFAULT),
    backoffCapMs: ms(DAY_MS).default(OUTBOX_BACKOFF_CAP_MS_DEFAULT),
    /** Attempt budget of a message recorded without maxAttempts. */
    maxAttemptsDefault: z.number().int().min(1).max(OUTBOX_MAX_ATTEMPTS_MAX).default(OUTBOX_MAX_ATTEMPTS_DEFAULT),
    /** How long finished messages are kept (ms; null: kept). */
    retention: z
      .object({
        publishedMs: z.number().int().min(0).nullable().default(OUTBOX_RETENTION_DEFAULT.publishedMs),
        deadLetteredMs: z.number().int().min(0).nullable().default(OUTBOX_RETENTION_DEFAULT.deadLetteredMs),
      })
      .strict()
      .prefault({}),
    retentionIntervalMs: ms(DAY_MS).default(OUTBOX_RETENTION_INTERVAL_MS_DEFAULT),
  })
  .strict()
  .refine((c) => c.visibilityMs > c.publishTimeoutMs, {
    message: 'visibilityMs must be greater than publishTimeoutMs (a claim must outlast its publish)',
    path: ['visibilityMs'],
  })
  .refine((c) => c.backoffCapMs >= c.backoffBaseMs, { message: 'backoffCapMs must be >= backoffBaseMs', path: ['backoffCapMs'] });

/** The outbox relay's settings (batch size, attempts, backoff, polling), as OutboxOptions takes them (docs/outbox.md). */
export type RelayConfigInput = z.input<typeof relayConfigSchema>;
export type RelayConfig = z.output<typeof relayConfigSchema>;

/** @throws BatonError INVALID_CONFIG naming every bad option. */
export function parseRelayConfig(input: RelayConfigInput | undefined): RelayConfig {
  const r = relayConfigSchema.safeParse(input ?? {});
  if (!r.success) {
    const issues = r.error.issues.map((i) => `outbox.${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new BatonError('INVALID_CONFIG', `invalid Baton options: ${issues.join('; ')}`, { details: issues });
  }
  return Object.freeze(r.data);
}
