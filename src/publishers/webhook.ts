// The webhook publisher: POSTs the payload as JSON over a keep-alive undici pool, signed as
// Standard Webhooks do (signature.ts): `webhook-id` (the same on every delivery of a message,
// so the receiver dedups on it), `webhook-timestamp`, `webhook-signature` over id, timestamp
// and body. The baton-* headers say more about the message; they are not signed.
// 2xx is delivered; 408, 429, 5xx, timeouts and connection errors are retried (Retry-After
// honoured); any other status dead-letters the message.

import { Agent, request } from 'undici';
import { z } from 'zod';
import { PublishError, type Publisher, type PublishMessage } from '../core/outbox/publisher.ts';
import { BatonError } from '../types/errors.ts';
import {
  signWebhook,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SECRET_PREFIX,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  webhookMessageId,
  webhookSecretKey,
} from './signature.ts';

/** A Standard Webhooks secret: `whsec_` and the base64 of 24 to 64 random bytes. */
const secretSchema = z
  .string()
  .refine(
    (s) => webhookSecretKey(s) !== undefined,
    `must be ${WEBHOOK_SECRET_PREFIX} and the base64 of 24 to 64 random bytes (generateWebhookSecret() makes one)`,
  );

export const webhookOptionsSchema = z
  .object({
    /** Where to POST (http or https). */
    url: z.url({ protocol: /^https?$/ }),
    /** Signing secret(s), `whsec_<base64>`: several while rotating (each signs; the receiver accepts any). */
    secret: z.union([secretSchema, z.array(secretSchema).min(1).max(4)]),
    /** Per-request deadline (the relay's publish deadline applies too). Default 10 s. */
    timeoutMs: z.number().int().min(1).max(600_000).default(10_000),
    /** Most connections to the receiver. Default 16. */
    connections: z.number().int().min(1).max(1_024).default(16),
    /** Extra headers on every request (e.g. an API key of the receiver). */
    headers: z.record(z.string(), z.string()).default({}),
  })
  .strict();
/** Options of webhookPublisher: the URL, the signing secret(s), headers, timeout, connections (docs/outbox.md, Webhook). */
export type WebhookOptions = z.input<typeof webhookOptionsSchema>;

/** Statuses worth retrying besides 5xx: the receiver timed out or asked us to slow down. */
const RETRY_STATUSES = new Set([408, 429]);
const RETRY_AFTER_MAX_MS = 24 * 3600 * 1000;

/** Retry-After as ms from now: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return undefined;
  const ms = /^\s*\d+\s*$/.test(v) ? Number(v) * 1000 : Date.parse(v) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(ms, 0), RETRY_AFTER_MAX_MS) : undefined;
}

/** A publisher that POSTs each message as JSON, signed as Standard Webhooks says; 2xx is delivered. */
export function webhookPublisher(options: WebhookOptions): Publisher {
  const parsed = webhookOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new BatonError('INVALID_CONFIG', `invalid webhook publisher options: ${issues.join('; ')}`, { details: issues });
  }
  const o = parsed.data;
  const secrets = typeof o.secret === 'string' ? [o.secret] : o.secret;
  const agent = new Agent({ connections: o.connections, keepAliveTimeout: 30_000, connectTimeout: Math.min(o.timeoutMs, 10_000) });
  return {
    async publish(m: PublishMessage, signal: AbortSignal): Promise<void> {
      const body = JSON.stringify(m.payload ?? null);
      const id = webhookMessageId(m.tenantId, m.messageKey);
      const timestamp = String(Math.floor(Date.now() / 1000));
      const headers: Record<string, string> = {
        ...o.headers,
        ...m.headers,
        'content-type': 'application/json',
        [WEBHOOK_ID_HEADER]: id,
        [WEBHOOK_TIMESTAMP_HEADER]: timestamp,
        [WEBHOOK_SIGNATURE_HEADER]: secrets.map((s) => signWebhook(s, id, timestamp, body)).join(' '),
        'baton-message-key': m.messageKey,
        'baton-message-id': m.id,
        'baton-topic': m.topic,
        'baton-tenant': m.tenantId,
        'baton-attempt': String(m.attempt),
      };
      if (m.orderingKey !== null) headers['baton-ordering-key'] = m.orderingKey;
      let res: Awaited<ReturnType<typeof request>>;
      try {
        res = await request(o.url, {
          method: 'POST',
          headers,
          body,
          dispatcher: agent,
          signal: AbortSignal.any([signal, AbortSignal.timeout(o.timeoutMs)]),
          headersTimeout: o.timeoutMs,
          bodyTimeout: o.timeoutMs,
        });
      } catch (err) {
        throw new PublishError('retry', `webhook ${o.url}: ${(err as Error).message ?? String(err)}`, { cause: err });
      }
      // The body is not used; reading it to the end lets the connection be reused.
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      const status = res.statusCode;
      if (status >= 200 && status < 300) return;
      const what = `webhook ${o.url} answered ${status}`;
      if (status >= 500 || RETRY_STATUSES.has(status) || status < 400) {
        const retryAfterMs = parseRetryAfter(res.headers['retry-after']);
        throw new PublishError('retry', what, retryAfterMs === undefined ? {} : { retryAfterMs });
      }
      throw new PublishError('reject', what);
    },
    async close(): Promise<void> {
      await agent.close();
    },
  };
}
