// The webhook publisher against a real HTTP server on loopback: signed as Standard Webhooks
// do, verified by the exported helper and by the reference implementation (npm
// standardwebhooks), and not when tampered, stale or replayed under another id; the spec's
// test vector; one webhook-id per message across retries and replays, 5xx and 429 are retried (Retry-After honoured), other 4xx
// dead-letter, and a receiver that hangs is cut off by the deadline and retried.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { generateWebhookSecret, signWebhook, verifyWebhookSignature, webhookPublisher } from '../../src/index.ts';
import { webhookMessageId, webhookSecretKey } from '../../src/publishers/signature.ts';
import { parseRetryAfter } from '../../src/publishers/webhook.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { outboxRow, outboxStates, useOutboxEngines } from './harness.ts';

const db = useTestDatabase();
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OTHER_SECRET = 'whsec_b3RoZXItc2VjcmV0LW9mLTI0LWJ5dGVzLSE=';

/** The three Standard Webhooks headers of a received request. */
function standardHeaders(h: http.IncomingHttpHeaders): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  return {
    'webhook-id': String(h['webhook-id']),
    'webhook-timestamp': String(h['webhook-timestamp']),
    'webhook-signature': String(h['webhook-signature']),
  };
}

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A receiver that answers each request with `answer(request index)`: a status, optional headers, or 'hang'. */
async function receiver(answer: (n: number, r: Received) => { status: number; headers?: Record<string, string> } | 'hang') {
  const received: Received[] = [];
  const hung: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(r);
      const a = answer(received.length, r);
      if (a === 'hang') {
        hung.push(res);
        return;
      }
      res.writeHead(a.status, a.headers ?? {});
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  servers.push(async () => {
    for (const r of hung) r.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url, received };
}
const servers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((close) => close()));
});

describe('webhook publisher', () => {
  const engines = useOutboxEngines(db);
  const fast = { backoffBaseMs: 1, backoffCapMs: 5, pollIntervalMs: 50 };

  it('POSTs the payload signed as Standard Webhooks do; both verifiers accept it, and nothing tampered or replayed under another id', async () => {
    const rx = await receiver(() => ({ status: 204 }));
    const baton = await engines.start({ outbox: { publishers: { hooks: webhookPublisher({ url: rx.url, secret: SECRET }) }, ...fast } });
    const { message } = await baton.outbox.record({
      destination: 'hooks',
      topic: 'order.placed',
      payload: { order: 42, note: 'é' },
      messageKey: 'order-42',
      headers: { 'X-Trace': 'abc' },
    });
    await waitFor(async () => (await outboxRow(db, message.id)).state === 'published');
    expect(rx.received).toHaveLength(1);
    const { headers, body } = rx.received[0]!;
    expect(JSON.parse(body)).toEqual({ order: 42, note: 'é' });
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': webhookMessageId('default', 'order-42'),
      'baton-message-key': 'order-42',
      'baton-message-id': message.id,
      'baton-topic': 'order.placed',
      'baton-attempt': '1',
      'x-trace': 'abc',
    });
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(headers['baton-signature']).toBeUndefined();
    const h = standardHeaders(headers);
    const ok = { secret: SECRET, body, id: h['webhook-id'], timestamp: h['webhook-timestamp'], signature: h['webhook-signature'] };
    expect(verifyWebhookSignature(ok)).toBe(true);
    // The reference implementation (npm standardwebhooks) accepts it too.
    expect(new Webhook(SECRET).verify(body, h)).toEqual({ order: 42, note: 'é' });

    expect(verifyWebhookSignature({ ...ok, secret: [OTHER_SECRET, SECRET] })).toBe(true);
    expect(verifyWebhookSignature({ ...ok, body: body.replace('42', '43') })).toBe(false);
    expect(verifyWebhookSignature({ ...ok, secret: OTHER_SECRET })).toBe(false);
    expect(verifyWebhookSignature({ ...ok, now: (Number(ok.timestamp) + 301) * 1000 })).toBe(false);
    expect(verifyWebhookSignature({ ...ok, signature: undefined })).toBe(false);
    expect(verifyWebhookSignature({ ...ok, id: undefined })).toBe(false);
    const stale = String(Number(ok.timestamp) - 1000);
    const staleSig = signWebhook(SECRET, ok.id, stale, body);
    expect(verifyWebhookSignature({ ...ok, timestamp: stale, signature: staleSig })).toBe(false);
    expect(verifyWebhookSignature({ ...ok, timestamp: stale, signature: staleSig, toleranceSeconds: 2000 })).toBe(true);
  });

  it('a request replayed within the tolerance under another webhook-id fails verification (the receiver dedups on the id)', async () => {
    const rx = await receiver(() => ({ status: 200 }));
    const baton = await engines.start({ outbox: { publishers: { hooks: webhookPublisher({ url: rx.url, secret: SECRET }) }, ...fast } });
    const { message } = await baton.outbox.record({
      destination: 'hooks',
      topic: 'charge',
      payload: { amount: 5 },
      messageKey: 'charge-1',
    });
    await waitFor(async () => (await outboxRow(db, message.id)).state === 'published');
    const { headers, body } = rx.received[0]!;
    const h = standardHeaders(headers);
    // An attacker resends the very bytes and signature, naming a fresh id (and, as before, a fresh key).
    const replayed = { ...h, 'webhook-id': webhookMessageId('default', 'charge-2') };
    const input = {
      secret: SECRET,
      body,
      id: replayed['webhook-id'],
      timestamp: replayed['webhook-timestamp'],
      signature: replayed['webhook-signature'],
    };
    expect(verifyWebhookSignature(input)).toBe(false);
    expect(() => new Webhook(SECRET).verify(body, replayed)).toThrow(WebhookVerificationError);
    // Untouched, it verifies: only the id changed.
    expect(verifyWebhookSignature({ ...input, id: h['webhook-id'] })).toBe(true);
  });

  it('keeps one webhook-id across retries and a replay; another key or tenant gets another', async () => {
    const rx = await receiver((n) => (n === 1 ? { status: 503 } : { status: 200 }));
    const baton = await engines.start({
      outbox: { publishers: { hooks: webhookPublisher({ url: rx.url, secret: [SECRET, OTHER_SECRET] }) }, ...fast },
    });
    const { message } = await baton.outbox.record({ destination: 'hooks', topic: 't', messageKey: 'same' });
    await waitFor(async () => (await outboxRow(db, message.id)).state === 'published');
    await baton.outbox.replay(message.id);
    await waitFor(() => rx.received.length === 3, { message: 'the replay delivered' });
    const ids = rx.received.map((r) => r.headers['webhook-id']);
    expect(new Set(ids)).toEqual(new Set([webhookMessageId('default', 'same')]));
    expect(webhookMessageId('acme', 'same')).not.toBe(ids[0]);
    expect(webhookMessageId('default', 'other')).not.toBe(ids[0]);
    // Two secrets while rotating: two signatures, and a receiver holding either one accepts.
    const last = rx.received[2]!;
    expect(String(last.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [SECRET, OTHER_SECRET])
      expect(() => new Webhook(secret).verify(last.body, standardHeaders(last.headers))).not.toThrow();
  });

  it("signs the specification's own test vector", () => {
    const vector = {
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      timestamp: 1614265330,
      body: '{"test": 2432232314}',
      signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    };
    expect(signWebhook(vector.secret, vector.id, vector.timestamp, vector.body)).toBe(vector.signature);
    const input = { ...vector, timestamp: String(vector.timestamp), now: vector.timestamp * 1000 };
    expect(verifyWebhookSignature(input)).toBe(true);
    // Versions other than v1 and malformed entries are skipped, not fatal.
    expect(verifyWebhookSignature({ ...input, signature: `v2,abc v1,!!! ${vector.signature}` })).toBe(true);
    expect(verifyWebhookSignature({ ...input, signature: vector.signature.replace('v1,', 'v2,') })).toBe(false);
    expect(verifyWebhookSignature({ ...input, secret: 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' })).toBe(false);
    const made = generateWebhookSecret();
    expect(webhookSecretKey(made)).toHaveLength(32);
    expect(new Webhook(made).sign('x', new Date(0), 'b')).toBe(signWebhook(made, 'x', 0, 'b'));
  });

  it('retries 500, 429 and 408, honours Retry-After, and dead-letters on another 4xx', async () => {
    const rx = await receiver((_n, r) => {
      const key = r.headers['baton-message-key'];
      if (key === 'gone') return { status: 410 };
      const tries = rx.received.filter((x) => x.headers['baton-message-key'] === key).length;
      if (key === 'later') return tries === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 };
      return tries === 1 ? { status: 503 } : tries === 2 ? { status: 408 } : { status: 200 };
    });
    const baton = await engines.start({ outbox: { publishers: { hooks: webhookPublisher({ url: rx.url, secret: SECRET }) }, ...fast } });
    const [flaky, gone, later] = await baton.outbox.recordMany(
      ['flaky', 'gone', 'later'].map((k) => ({ destination: 'hooks', topic: 't', messageKey: k })),
    );
    await waitFor(async () => (await outboxStates(db)).pending === undefined, { message: 'every message finished' });
    expect(await outboxRow(db, flaky!.message.id)).toMatchObject({ state: 'published', attempt: 3 });
    expect(await outboxRow(db, gone!.message.id)).toMatchObject({ state: 'dead_lettered', attempt: 1, dead_letter_reason: 'rejected' });
    const l = await outboxRow(db, later!.message.id);
    expect(l).toMatchObject({ state: 'published', attempt: 2 });
    // The second try waited out the Retry-After second (the backoff alone is at most 5 ms).
    expect(l.finished_at.getTime() - l.created_at.getTime()).toBeGreaterThanOrEqual(950);
  });

  it('a receiver that hangs is cut off by the timeout and the message retried', async () => {
    const rx = await receiver((n) => (n === 1 ? 'hang' : { status: 200 }));
    const baton = await engines.start({
      outbox: { publishers: { hooks: webhookPublisher({ url: rx.url, secret: SECRET, timeoutMs: 300 }) }, ...fast },
    });
    const { message } = await baton.outbox.record({ destination: 'hooks', topic: 't', messageKey: 'h' });
    await waitFor(async () => (await outboxRow(db, message.id)).state === 'published');
    expect((await outboxRow(db, message.id)).attempt).toBe(2);
    expect(rx.received).toHaveLength(2);
  });

  it('a refused connection is retried', async () => {
    const rx = await receiver(() => ({ status: 200 }));
    const closedUrl = rx.url;
    await servers.pop()!();
    const baton = await engines.start({ outbox: { publishers: { hooks: webhookPublisher({ url: closedUrl, secret: SECRET }) }, ...fast } });
    const { message } = await baton.outbox.record({ destination: 'hooks', topic: 't', messageKey: 'c', maxAttempts: 2 });
    await waitFor(async () => (await outboxRow(db, message.id)).state === 'dead_lettered');
    const row = await outboxRow(db, message.id);
    expect(row).toMatchObject({ attempt: 2, dead_letter_reason: 'attempts_exhausted' });
    expect(row.last_error.message).toMatch(/ECONNREFUSED|connect/);
  });

  it('parses Retry-After as seconds or an HTTP date, and refuses bad options', () => {
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(() => webhookPublisher({ url: 'ftp://x', secret: SECRET })).toThrow(/url/);
    expect(() => webhookPublisher({ url: 'http://x', secret: 'short' })).toThrow(/secret/);
    // The secrets of the old scheme (any 16 characters) are refused, saying what to use instead.
    expect(() => webhookPublisher({ url: 'http://x', secret: 'a-secret-of-sixteen-chars' })).toThrow(/whsec_ and the base64 of 24 to 64/);
    expect(() => webhookPublisher({ url: 'http://x', secret: 'whsec_c2hvcnQ=' })).toThrow(/secret/);
  });
});
