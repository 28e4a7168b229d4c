// Trace context into outbox messages: a message recorded inside an active span carries its W3C
// traceparent (and tracestate) as headers, and each publisher sends them as it sends the others:
// on the webhook request, on the AMQP message (real RabbitMQ) and on the NATS message (real
// JetStream). A traceparent the producer set itself, or traceContext: null, wins; the two trace
// headers come on top of the producer's at most 32; a tracestate that is no valid header value is left out.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, nanos } from '@nats-io/transport-node';
import { type SpanContext, trace } from '@opentelemetry/api';
import amqp from 'amqplib';
import { describe, expect, it } from 'vitest';
import { generateWebhookSecret, natsPublisher, rabbitmqPublisher, webhookPublisher } from '../../src/index.ts';
import { AMQP_URL, brokerAvailable, NATS_URL, uniqueName } from '../helpers/brokers.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { useInMemoryTracing } from '../helpers/otel.ts';
import { waitFor } from '../helpers/wait.ts';
import { outboxRow, useOutboxEngines } from './harness.ts';

const rabbit = await brokerAvailable('RabbitMQ', AMQP_URL);
const nats = await brokerAvailable('NATS JetStream', NATS_URL);
const db = useTestDatabase();
const fast = { backoffBaseMs: 1, backoffCapMs: 50, pollIntervalMs: 50 };
useInMemoryTracing();

const traceparentOf = (s: SpanContext) => `00-${s.traceId}-${s.spanId}-01`;

/** Records `messages` inside a span; answers the span's traceparent. */
async function recordTraced(record: () => Promise<unknown>): Promise<string> {
  return trace.getTracer('test').startActiveSpan('produce', async (span) => {
    await record();
    span.end();
    return traceparentOf(span.spanContext());
  });
}

describe('trace headers on outbox messages', () => {
  const engines = useOutboxEngines(db);

  it('a webhook request carries the producer span as traceparent; a traceparent set by the producer and traceContext: null win', async () => {
    const received: http.IncomingHttpHeaders[] = [];
    const server = http.createServer((req, res) => {
      received.push(req.headers);
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const baton = await engines.start({
        outbox: { publishers: { hooks: webhookPublisher({ url, secret: generateWebhookSecret() }) }, ...fast },
      });
      const ids: string[] = [];
      const record = (key: string, extra: object = {}, opts: object = {}) =>
        baton.outbox.record({ destination: 'hooks', topic: 't', messageKey: key, ...extra }, opts).then((r) => ids.push(r.message.id));
      const traceparent = await recordTraced(() => record('traced'));
      const own = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      await recordTraced(() => record('own', { headers: { traceparent: own } }));
      await recordTraced(() => record('none', {}, { traceContext: null }));
      await record('given', {}, { traceContext: { traceparent: own, tracestate: 'v=1' } });
      // The producer's 32 headers (the most it may give) and the trace context on top: 34 sent.
      const full = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`x-h${i}`, String(i)]));
      await record('full', { headers: full }, { traceContext: { traceparent: own, tracestate: 'v=1' } });
      // A tracestate no publisher could send as a header is left out, not stored to fail every publish.
      await record('bad-state', {}, { traceContext: { traceparent: own, tracestate: 'v=\u00e9\n' } });
      await waitFor(async () => (await Promise.all(ids.map((id) => outboxRow(db, id)))).every((r) => r.state === 'published'));
      const byKey = new Map(received.map((h) => [h['baton-message-key'], h]));
      expect(byKey.get('traced')?.traceparent).toBe(traceparent);
      expect(byKey.get('own')?.traceparent).toBe(own);
      expect(byKey.get('none')?.traceparent).toBeUndefined();
      expect(byKey.get('given')).toMatchObject({ traceparent: own, tracestate: 'v=1' });
      expect(byKey.get('full')).toMatchObject({ ...full, traceparent: own, tracestate: 'v=1' });
      expect(byKey.get('bad-state')).toMatchObject({ traceparent: own });
      expect(byKey.get('bad-state')?.tracestate).toBeUndefined();
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it.skipIf(!rabbit)('a RabbitMQ message carries traceparent and tracestate headers', async () => {
    const conn = await amqp.connect(AMQP_URL);
    const ch = await conn.createChannel();
    const exchange = uniqueName('baton_trace');
    try {
      await ch.assertExchange(exchange, 'topic', { durable: false });
      const q = await ch.assertQueue('', { exclusive: true });
      await ch.bindQueue(q.queue, exchange, '#');
      const got: amqp.ConsumeMessage[] = [];
      await ch.consume(q.queue, (m) => m && got.push(m), { noAck: true });
      const baton = await engines.start({ outbox: { publishers: { rabbit: rabbitmqPublisher({ url: AMQP_URL, exchange }) }, ...fast } });
      const given = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'congo=t61rcWkgMzE' };
      const traceparent = await recordTraced(() => baton.outbox.record({ destination: 'rabbit', topic: 'a.b', messageKey: 'traced' }));
      await baton.outbox.record({ destination: 'rabbit', topic: 'a.b', messageKey: 'given' }, { traceContext: given });
      await waitFor(() => got.length >= 2, { message: 'two deliveries' });
      const byKey = new Map(got.map((m) => [m.properties.messageId, m.properties.headers]));
      expect(byKey.get('traced')).toMatchObject({ traceparent });
      expect(byKey.get('given')).toMatchObject(given);
    } finally {
      await ch.deleteExchange(exchange).catch(() => undefined);
      await conn.close();
    }
  });

  it.skipIf(!nats)('a NATS message carries traceparent and tracestate headers', async () => {
    const nc = await connect({ servers: NATS_URL });
    const jsm = await jetstreamManager(nc);
    const subject = uniqueName('baton.trace').replaceAll('.', '_');
    const name = uniqueName('BATON_TRACE').replace(/[^A-Za-z0-9_]/g, '_');
    try {
      await jsm.streams.add({ name, subjects: [`${subject}.>`], duplicate_window: nanos(120_000) });
      const baton = await engines.start({ outbox: { publishers: { js: natsPublisher({ servers: NATS_URL }) }, ...fast } });
      const traceparent = await recordTraced(() => baton.outbox.record({ destination: 'js', topic: `${subject}.x`, messageKey: 'traced' }));
      await baton.outbox.record(
        { destination: 'js', topic: `${subject}.x`, messageKey: 'given' },
        { traceContext: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'v=2' } },
      );
      await waitFor(async () => (await jsm.streams.info(name)).state.messages === 2, { message: 'two messages in the stream' });
      const first = await jsm.streams.getMessage(name, { seq: 1 });
      const second = await jsm.streams.getMessage(name, { seq: 2 });
      const byKey = new Map([first, second].map((m) => [m?.header.get('Nats-Msg-Id'), m?.header]));
      expect(byKey.get('traced')?.get('traceparent')).toBe(traceparent);
      expect(byKey.get('given')?.get('tracestate')).toBe('v=2');
    } finally {
      await jsm.streams.delete(name).catch(() => undefined);
      await nc.close();
    }
  });
});
