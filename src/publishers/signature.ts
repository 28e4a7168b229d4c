// Webhook signatures as the Standard Webhooks specification (standardwebhooks.com) defines
// them: `webhook-id`, `webhook-timestamp` (unix seconds) and `webhook-signature: v1,<base64
// HMAC-SHA256 of "<id>.<timestamp>.<raw body>">`, keyed with the decoded bytes of a
// `whsec_<base64>` secret; one entry per secret, space-separated, so a secret can be rotated.
// The id is signed with the body: a request replayed under another id fails verification, so
// a receiver that dedups on webhook-id cannot be made to take it twice. Receivers verify with
// verifyWebhookSignature, or any Standard Webhooks library, on the raw body bytes.

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';
export const SIGNATURE_TOLERANCE_SECONDS_DEFAULT = 300;
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** Key sizes the specification recommends for a secret, in bytes. */
export const WEBHOOK_SECRET_BYTES_MIN = 24;
export const WEBHOOK_SECRET_BYTES_MAX = 64;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The HMAC key of a `whsec_<base64>` secret: its decoded bytes, 24 to 64 of them. Undefined for
 * anything else (no prefix, not base64, too short or too long).
 */
export function webhookSecretKey(secret: string): Buffer | undefined {
  if (!secret.startsWith(WEBHOOK_SECRET_PREFIX)) return undefined;
  const b64 = secret.slice(WEBHOOK_SECRET_PREFIX.length);
  if (!BASE64.test(b64)) return undefined;
  const key = Buffer.from(b64, 'base64');
  return key.length >= WEBHOOK_SECRET_BYTES_MIN && key.length <= WEBHOOK_SECRET_BYTES_MAX ? key : undefined;
}

/** A new random secret: `whsec_` and the base64 of `bytes` (default 32) random bytes. */
export function generateWebhookSecret(bytes = 32): string {
  if (!Number.isInteger(bytes) || bytes < WEBHOOK_SECRET_BYTES_MIN || bytes > WEBHOOK_SECRET_BYTES_MAX) {
    throw new RangeError(`generateWebhookSecret: bytes must be an integer from ${WEBHOOK_SECRET_BYTES_MIN} to ${WEBHOOK_SECRET_BYTES_MAX}`);
  }
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(bytes).toString('base64')}`;
}

/**
 * The webhook-id of an outbox message: `msg_` and the base64url SHA-256 of its tenant and
 * messageKey. The same on every delivery of the message (retries, a replay, a repeated
 * record), different for another key or another tenant's same key, and safe in a header
 * whatever characters the key holds.
 */
export function webhookMessageId(tenantId: string, messageKey: string): string {
  return `msg_${createHash('sha256').update(tenantId).update('\u0000').update(messageKey).digest('base64url')}`;
}

/** The `v1,<base64>` signature of `body` sent as message `id` at `timestamp` (unix seconds). Throws on a malformed secret. */
export function signWebhook(secret: string, id: string, timestamp: number | string, body: string | Uint8Array): string {
  const key = webhookSecretKey(secret);
  if (!key) throw new TypeError(`signWebhook: the secret must be ${WEBHOOK_SECRET_PREFIX} and the base64 of 24 to 64 bytes`);
  return `v1,${hmac(key, id, String(timestamp), body).toString('base64')}`;
}

function hmac(key: Buffer, id: string, timestamp: string, body: string | Uint8Array): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}

/** What verifyWebhookSignature checks: the secrets, the raw body and the three webhook- headers. */
export interface VerifyWebhookInput {
  /** One `whsec_` secret, or several while rotating: any may match. */
  secret: string | readonly string[];
  /** The raw request body, exactly as received. */
  body: string | Uint8Array;
  /** The webhook-id header. */
  id: string | null | undefined;
  /** The webhook-timestamp header. */
  timestamp: string | null | undefined;
  /** The webhook-signature header. */
  signature: string | null | undefined;
  /** How far the timestamp may be from now (replay window). Default 300 s. */
  toleranceSeconds?: number;
  /** Now, in ms since the epoch (tests). Default Date.now(). */
  now?: number;
}

/**
 * True when one of the header's `v1` signatures is the HMAC of this id, timestamp and body under
 * one of the secrets, and the timestamp is within the tolerance. Other versions are ignored, as
 * the specification says. Constant-time comparison; never throws (a malformed secret matches nothing).
 */
export function verifyWebhookSignature(input: VerifyWebhookInput): boolean {
  const { id, timestamp, signature } = input;
  if (typeof id !== 'string' || id === '' || typeof signature !== 'string') return false;
  if (typeof timestamp !== 'string' || !/^\d{1,12}$/.test(timestamp)) return false;
  const tolerance = input.toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS_DEFAULT;
  const nowSeconds = Math.floor((input.now ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > tolerance) return false;
  const given = signature
    .split(' ')
    .filter((s) => s.startsWith('v1,') && BASE64.test(s.slice(3)))
    .map((s) => Buffer.from(s.slice(3), 'base64'))
    .filter((b) => b.length === 32);
  const secrets = typeof input.secret === 'string' ? [input.secret] : input.secret;
  let ok = false;
  for (const secret of secrets) {
    const key = webhookSecretKey(secret);
    if (!key) continue;
    const expected = hmac(key, id, timestamp, input.body);
    // Every pair is compared, so the time taken does not say which (if any) matched.
    for (const g of given) if (timingSafeEqual(g, expected)) ok = true;
  }
  return ok;
}
