// The webhook publisher against a real HTTP server on loopback: the signature verifies with
// the exported helper (and a tampered body, wrong secret or stale timestamp does not), the
// message key travels in a header, 5xx and 429 are retried (Retry-After honoured), other 4xx
// dead-letter, and a receiver that hangs is cut off by the deadline and retried.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseRetryAfter, signWebhook, verifyWebhookSignature, webhookPublisher } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { outboxRow, outboxStates, useOutboxEngines } from './harness.ts';

const db = useTestDatabase();
const SECRET = 'a-secret-of-sixteen-chars';

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

  it('POSTs the payload signed over timestamp + body; the exported helper verifies it and nothing tampered', async () => {
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
      'baton-message-key': 'order-42',
      'baton-message-id': message.id,
      'baton-topic': 'order.placed',
      'baton-attempt': '1',
      'x-trace': 'abc',
    });
    const ok = { secret: SECRET, body, timestamp: headers['baton-timestamp'] as string, signature: headers['baton-signature'] as string };
    expect(verifyWebhookSignature(ok)).toBe(true);
    expect(verifyWebhookSignature({ ...ok, secret: ['old-secret-sixteen-chars', SECRET] })).toBe(true);
    expect(verifyWebhookSignature({ ...ok, body: body.replace('42', '43') })).toBe(false);
    expect(verifyWebhookSignature({ ...ok, secret: 'another-secret-of-16' })).toBe(false);
    expect(verifyWebhookSignature({ ...ok, now: (Number(ok.timestamp) + 301) * 1000 })).toBe(false);
    expect(verifyWebhookSignature({ ...ok, signature: undefined })).toBe(false);
    const stale = String(Number(ok.timestamp) - 1000);
    expect(verifyWebhookSignature({ ...ok, timestamp: stale, signature: signWebhook(SECRET, stale, body) })).toBe(false);
    expect(verifyWebhookSignature({ ...ok, timestamp: stale, signature: signWebhook(SECRET, stale, body), toleranceSeconds: 2000 })).toBe(
      true,
    );
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
  });
});
