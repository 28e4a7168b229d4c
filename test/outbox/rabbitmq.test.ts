// The RabbitMQ publisher against the real broker: every message arrives with the message key as
// its AMQP message-id and is marked published only after the broker's confirm; an unroutable
// message (no queue bound) is retried until a queue exists; a reset connection is reopened.

import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rabbitmqPublisher } from '../../src/index.ts';
import { FaultProxy } from '../chaos/fault-proxy.ts';
import { AMQP_URL, brokerAvailable, uniqueName } from '../helpers/brokers.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { outboxRow, outboxStates, useOutboxEngines } from './harness.ts';

const available = await brokerAvailable('RabbitMQ', AMQP_URL);
const db = useTestDatabase();
const fast = { backoffBaseMs: 1, backoffCapMs: 50, pollIntervalMs: 50 };

describe.skipIf(!available)('RabbitMQ publisher (real broker)', () => {
  const engines = useOutboxEngines(db);
  let conn: amqp.ChannelModel;
  let ch: amqp.Channel;
  const exchanges: string[] = [];

  beforeAll(async () => {
    conn = await amqp.connect(AMQP_URL);
    ch = await conn.createChannel();
  });
  afterAll(async () => {
    for (const x of exchanges) await ch?.deleteExchange(x).catch(() => undefined);
    await conn?.close();
  });

  /** A topic exchange of this test, and (unless `bind` is false) an exclusive queue bound to all of it. */
  async function exchange(bind = true) {
    const name = uniqueName('baton_test');
    exchanges.push(name);
    await ch.assertExchange(name, 'topic', { durable: false, autoDelete: false });
    const got: amqp.ConsumeMessage[] = [];
    const bindQueue = async () => {
      const q = await ch.assertQueue('', { exclusive: true });
      await ch.bindQueue(q.queue, name, '#');
      await ch.consume(q.queue, (m) => m && got.push(m), { noAck: true });
    };
    if (bind) await bindQueue();
    return { name, got, bindQueue };
  }

  it('delivers every message with the message key as message-id, persistent, after the confirm', async () => {
    const x = await exchange();
    const baton = await engines.start({
      outbox: { publishers: { rabbit: rabbitmqPublisher({ url: AMQP_URL, exchange: x.name }) }, ...fast },
    });
    const keys = Array.from({ length: 50 }, (_, i) => `order-${i}`);
    await baton.outbox.recordMany(
      keys.map((k, i) => ({ destination: 'rabbit', topic: 'order.placed', payload: { i }, messageKey: k, headers: { 'X-Kind': 'test' } })),
    );
    await waitFor(() => x.got.length >= 50, { message: '50 deliveries' });
    await waitFor(async () => (await outboxStates(db)).published === 50);
    expect(new Set(x.got.map((m) => m.properties.messageId))).toEqual(new Set(keys));
    const first = x.got.find((m) => m.properties.messageId === 'order-7')!;
    expect(JSON.parse(first.content.toString())).toEqual({ i: 7 });
    expect(first.fields.routingKey).toBe('order.placed');
    expect(first.properties).toMatchObject({ contentType: 'application/json', deliveryMode: 2 });
    expect(first.properties.headers).toMatchObject({ 'X-Kind': 'test', 'baton-attempt': 1 });
  });

  it('an unroutable message is retried (not counted as published) until a queue is bound', async () => {
    const x = await exchange(false);
    const baton = await engines.start({
      outbox: { publishers: { rabbit: rabbitmqPublisher({ url: AMQP_URL, exchange: x.name }) }, ...fast },
    });
    const { message } = await baton.outbox.record({ destination: 'rabbit', topic: 'nowhere', messageKey: 'lost-1', maxAttempts: 1000 });
    const retried = await waitFor(async () => {
      const r = await outboxRow(db, message.id);
      return r.attempt >= 2 ? r : null;
    });
    expect(retried.state).toBe('pending');
    expect(retried.last_error.message).toContain('unroutable');
    await x.bindQueue();
    await waitFor(async () => (await outboxRow(db, message.id)).state === 'published', { message: 'published once a queue is bound' });
    expect(x.got.map((m) => m.properties.messageId)).toContain('lost-1');
  });

  it('reopens a connection the network reset, and loses nothing', async () => {
    const x = await exchange();
    const u = new URL(AMQP_URL);
    const proxy = new FaultProxy({ targetHost: u.hostname, targetPort: Number(u.port) });
    await proxy.listen();
    try {
      const viaProxy = `amqp://guest:guest@127.0.0.1:${proxy.port}`;
      const baton = await engines.start({
        outbox: { publishers: { rabbit: rabbitmqPublisher({ url: viaProxy, exchange: x.name }) }, ...fast },
      });
      await baton.outbox.recordMany(
        Array.from({ length: 10 }, (_, i) => ({ destination: 'rabbit', topic: 'a', messageKey: `before-${i}` })),
      );
      await waitFor(async () => (await outboxStates(db)).published === 10);
      proxy.resetAll();
      await baton.outbox.recordMany(
        Array.from({ length: 10 }, (_, i) => ({ destination: 'rabbit', topic: 'a', messageKey: `after-${i}` })),
      );
      await waitFor(async () => (await outboxStates(db)).published === 20, { message: 'all 20 published after the reset' });
      expect(proxy.stats().resets).toBeGreaterThan(0);
      const ids = new Set(x.got.map((m) => m.properties.messageId));
      for (let i = 0; i < 10; i++) expect(ids.has(`after-${i}`) && ids.has(`before-${i}`)).toBe(true);
    } finally {
      await proxy.close();
    }
  });
});
