// Webhook signatures: HMAC-SHA256 over `${timestamp}.${body}`, sent as
// `baton-signature: v1=<hex>` (one entry per signing secret, comma-separated, so a secret can
// be rotated) with `baton-timestamp: <unix seconds>`. Receivers verify with
// verifyWebhookSignature on the raw body bytes, before parsing them.

import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'baton-signature';
export const TIMESTAMP_HEADER = 'baton-timestamp';
export const SIGNATURE_TOLERANCE_SECONDS_DEFAULT = 300;

/** The `v1=<hex>` signature of `body` at `timestamp` (unix seconds) with `secret`. */
export function signWebhook(secret: string, timestamp: number | string, body: string | Uint8Array): string {
  const mac = createHmac('sha256', secret);
  mac.update(`${timestamp}.`);
  mac.update(body);
  return `v1=${mac.digest('hex')}`;
}

export interface VerifyWebhookInput {
  /** One secret, or several while rotating: any may match. */
  secret: string | readonly string[];
  /** The raw request body, exactly as received. */
  body: string | Uint8Array;
  /** The baton-timestamp header. */
  timestamp: string | null | undefined;
  /** The baton-signature header. */
  signature: string | null | undefined;
  /** How far the timestamp may be from now (replay window). Default 300 s. */
  toleranceSeconds?: number;
  /** Now, in ms since the epoch (tests). Default Date.now(). */
  now?: number;
}

/**
 * True when one of the header's v1 signatures is the HMAC of this body and timestamp under one
 * of the secrets, and the timestamp is within the tolerance. Constant-time comparison; never throws.
 */
export function verifyWebhookSignature(input: VerifyWebhookInput): boolean {
  const { timestamp, signature } = input;
  if (typeof timestamp !== 'string' || !/^\d{1,12}$/.test(timestamp) || typeof signature !== 'string') return false;
  const tolerance = input.toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS_DEFAULT;
  const nowSeconds = Math.floor((input.now ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > tolerance) return false;
  const given = signature
    .split(',')
    .map((s) => s.trim())
    .filter((s) => /^v1=[0-9a-f]{64}$/.test(s))
    .map((s) => Buffer.from(s.slice(3), 'hex'));
  const secrets = typeof input.secret === 'string' ? [input.secret] : input.secret;
  let ok = false;
  for (const secret of secrets) {
    const expected = Buffer.from(signWebhook(secret, timestamp, input.body).slice(3), 'hex');
    // Every pair is compared, so the time taken does not say which (if any) matched.
    for (const g of given) if (timingSafeEqual(g, expected)) ok = true;
  }
  return ok;
}
