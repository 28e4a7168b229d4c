// The RabbitMQ publisher (amqplib, an optional peer dependency): publishes on a confirm
// channel, persistent and mandatory, with the message key as the AMQP message-id. A message
// counts as published only when the broker confirms it; one it returns as unroutable (no queue
// bound) or nacks is retried. A lost connection is reopened by the next publish.

import { randomUUID } from 'node:crypto';
import type { ChannelModel, ConfirmChannel, Message } from 'amqplib';
import { z } from 'zod';
import { PublishError, type Publisher, type PublishMessage } from '../core/outbox/publisher.ts';
import { LazyConnection } from './lazy-connection.ts';
import { issuesLine, optionalImport } from './optional-import.ts';

export const rabbitmqOptionsSchema = z
  .object({
    /** amqp:// URL, e.g. amqp://guest:guest@127.0.0.1:5672. */
    url: z.string().regex(/^amqps?:\/\//, 'must be an amqp:// or amqps:// URL'),
    /** The exchange to publish to; the message's topic is the routing key. '' (default): the default exchange (topic = queue name). */
    exchange: z.string().max(255).default(''),
    /** Heartbeat in seconds, so a silently dropped connection is noticed. Default 10. */
    heartbeatSeconds: z.number().int().min(0).max(600).default(10),
  })
  .strict();
/** Options of rabbitmqPublisher: the URL, the exchange (the message's topic is the routing key), the heartbeat (docs/outbox.md, RabbitMQ). */
export type RabbitmqOptions = z.input<typeof rabbitmqOptionsSchema>;

interface Open {
  model: ChannelModel;
  channel: ConfirmChannel;
  /** Publish ids of messages the broker returned as unroutable (basic.return precedes the confirm). */
  returned: Set<string>;
}

/** A publisher to RabbitMQ with publisher confirms (amqplib is an optional peer dependency). */
export function rabbitmqPublisher(options: RabbitmqOptions): Publisher {
  const parsed = rabbitmqOptionsSchema.safeParse(options);
  if (!parsed.success) throw issuesLine('RabbitMQ publisher', parsed.error.issues);
  const o = parsed.data;
  let closed = false;

  const open = async (): Promise<Open> => {
    const amqp = await optionalImport('amqplib', () => import('amqplib'), 'the RabbitMQ publisher');
    const connect = amqp.connect ?? (amqp as unknown as { default: typeof amqp }).default.connect;
    const url = new URL(o.url);
    url.searchParams.set('heartbeat', String(o.heartbeatSeconds));
    const model = await connect(url.toString());
    const forget = () => conn.forget();
    model.on('error', forget);
    model.on('close', forget);
    try {
      const channel = await model.createConfirmChannel();
      const returned = new Set<string>();
      channel.on('return', (m: Message) => {
        const id = m.properties.headers?.['baton-publish-id'];
        if (typeof id === 'string') returned.add(id);
      });
      channel.on('error', forget);
      channel.on('close', () => {
        forget();
        model.close().catch(() => undefined);
      });
      return { model, channel, returned };
    } catch (err) {
      await model.close().catch(() => undefined);
      throw err;
    }
  };

  const conn = new LazyConnection<Open>('RabbitMQ', () => open());

  return {
    async publish(m: PublishMessage, signal: AbortSignal): Promise<void> {
      if (closed) throw new PublishError('retry', 'the RabbitMQ publisher is closed');
      const c = await conn.get();
      signal.throwIfAborted();
      const publishId = randomUUID();
      await new Promise<void>((resolve, reject) => {
        try {
          c.channel.publish(
            o.exchange,
            m.topic,
            Buffer.from(JSON.stringify(m.payload ?? null)),
            {
              messageId: m.messageKey,
              persistent: true,
              mandatory: true,
              contentType: 'application/json',
              timestamp: Math.floor(Date.now() / 1000),
              headers: {
                ...m.headers,
                'baton-message-id': m.id,
                'baton-tenant': m.tenantId,
                'baton-attempt': m.attempt,
                'baton-publish-id': publishId,
                ...(m.orderingKey === null ? {} : { 'baton-ordering-key': m.orderingKey }),
              },
            },
            (err: unknown) => {
              if (err) reject(new PublishError('retry', 'RabbitMQ nacked the message', { cause: err }));
              else if (c.returned.delete(publishId))
                reject(
                  new PublishError(
                    'retry',
                    `RabbitMQ returned the message as unroutable (exchange "${o.exchange}", routing key "${m.topic}")`,
                  ),
                );
              else resolve();
            },
          );
        } catch (err) {
          // The channel closed under us (amqplib throws synchronously): reopen next time.
          conn.forget();
          reject(new PublishError('retry', `RabbitMQ: ${(err as Error).message}`, { cause: err }));
        }
      });
    },
    async close(): Promise<void> {
      closed = true;
      const c = await conn.take();
      await c?.model.close().catch(() => undefined);
    },
  };
}
