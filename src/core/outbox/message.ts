// Outbox messages: what a producer records, how it is validated before any SQL runs, and the
// stored row as the relay and operators see it. States: pending (waiting, claimed or between
// retries), published (the destination acknowledged it), dead_lettered (rejected or exhausted).

import { z } from 'zod';
import { BatonError } from '../../types/errors.ts';
import type { NewOutboxMessage } from '../../types/outbox.ts';
import type { TraceCarrier } from '../../types/trace.ts';
import { nameSchema as name } from '../config.ts';
import { jsonTextHasNul } from '../job-spec.ts';

export {
  DEAD_LETTER_REASONS,
  type DeadLetterReason,
  type NewOutboxMessage,
  OUTBOX_STATES,
  type OutboxError,
  type OutboxMessage,
  type OutboxState,
  type RecordResult,
} from '../../types/outbox.ts';

export const OUTBOX_MAX_ATTEMPTS_DEFAULT = 10;
export const OUTBOX_MAX_ATTEMPTS_MAX = 1_000;
export const MESSAGE_KEY_MAX_CHARS = 512;
export const TOPIC_MAX_CHARS = 255;
export const ORDERING_KEY_MAX_CHARS = 255;
/** Most messages one recordMany takes (one INSERT statement). */
export const RECORD_BATCH_MAX = 10_000;
/**
 * Most headers a producer may give one message. The trace context Baton adds (withTraceHeaders)
 * comes on top of them: a stored message carries at most OUTBOX_HEADERS_MAX + 2 headers, so
 * whether tracing is on never decides whether a producer's message is accepted.
 */
export const OUTBOX_HEADERS_MAX = 32;

const noNul = (s: string) => !s.includes('\u0000');
/** Header names a publisher may send as-is (HTTP tokens, AMQP and NATS header names alike); baton-* is ours. */
const HEADER_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;
const RESERVED_HEADER = /^(baton-|webhook-|nats-|content-|host$|connection$|transfer-encoding$|authorization$|user-agent$)/i;
// Printable ASCII only: a header value travels through HTTP, AMQP and NATS unchanged.
const HEADER_VALUE = /^[\x20-\x7e]{0,1024}$/;

export const outboxMessageSchema = z
  .object({
    tenantId: name.optional(),
    destination: name,
    topic: z
      .string()
      .min(1)
      .max(TOPIC_MAX_CHARS)
      .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces'),
    payload: z.unknown().optional(),
    headers: z
      .record(z.string(), z.string())
      .superRefine((h, ctx) => {
        const names = Object.keys(h);
        if (names.length > OUTBOX_HEADERS_MAX) ctx.addIssue({ code: 'custom', message: `at most ${OUTBOX_HEADERS_MAX} headers` });
        for (const n of names) {
          if (!HEADER_NAME.test(n)) ctx.addIssue({ code: 'custom', path: [n], message: 'header names are 1-64 chars of [A-Za-z0-9-]' });
          else if (RESERVED_HEADER.test(n)) ctx.addIssue({ code: 'custom', path: [n], message: 'this header name is reserved' });
          if (!HEADER_VALUE.test(h[n] as string))
            ctx.addIssue({ code: 'custom', path: [n], message: 'header values are at most 1024 printable ASCII chars' });
        }
      })
      .optional(),
    messageKey: z.string().min(1).max(MESSAGE_KEY_MAX_CHARS).refine(noNul, 'must not contain NUL bytes'),
    orderingKey: z.string().min(1).max(ORDERING_KEY_MAX_CHARS).refine(noNul, 'must not contain NUL bytes').optional(),
    maxAttempts: z.number().int().min(1).max(OUTBOX_MAX_ATTEMPTS_MAX).optional(),
  })
  .strict();

/** What a producer records. `messageKey` is the consumer's dedup key, unique per tenant and destination. */
export type OutboxMessageInput = z.input<typeof outboxMessageSchema>;

/** Validates and defaults one message; throws BatonError INVALID_ARGUMENT naming the field. */
export function normalizeMessage(input: OutboxMessageInput, maxAttemptsDefault: number, index?: number): NewOutboxMessage {
  const where = index === undefined ? '' : `messages[${index}].`;
  const parsed = outboxMessageSchema.safeParse(input);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${where}${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new BatonError('INVALID_ARGUMENT', `invalid outbox message: ${issues.join('; ')}`, { details: issues });
  }
  const m = parsed.data;
  let text: string | undefined;
  try {
    text = JSON.stringify(m.payload ?? null);
  } catch (err) {
    throw new BatonError('INVALID_ARGUMENT', `invalid outbox message: ${where}payload: not JSON-serialisable`, { cause: err });
  }
  if (text === undefined || jsonTextHasNul(text)) {
    throw new BatonError('INVALID_ARGUMENT', `invalid outbox message: ${where}payload: must be JSON without NUL (\\u0000) characters`);
  }
  return {
    tenantId: m.tenantId ?? 'default',
    destination: m.destination,
    topic: m.topic,
    payload: m.payload ?? null,
    headers: m.headers ?? {},
    messageKey: m.messageKey,
    orderingKey: m.orderingKey ?? null,
    maxAttempts: m.maxAttempts ?? maxAttemptsDefault,
  };
}

/**
 * The message with the producer's W3C trace context as `traceparent` / `tracestate` headers,
 * which every publisher sends as it sends the others (webhook request headers, AMQP message
 * headers, NATS headers), so a consumer continues the producer's trace. A traceparent the
 * producer set itself is kept as given. These two are beyond OUTBOX_HEADERS_MAX. A tracestate
 * that is not a valid header value (a caller's, unchecked by the W3C parse) is left out: every
 * publish of the message would fail on it.
 */
export function withTraceHeaders(m: NewOutboxMessage, trace: TraceCarrier | null): NewOutboxMessage {
  const given = (name: string) => Object.keys(m.headers).some((n) => n.toLowerCase() === name);
  if (!trace || given('traceparent')) return m;
  const headers: Record<string, string> = { ...m.headers, traceparent: trace.traceparent };
  if (trace.tracestate && HEADER_VALUE.test(trace.tracestate) && !given('tracestate')) headers.tracestate = trace.tracestate;
  return { ...m, headers };
}
