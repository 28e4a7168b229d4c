// The NATS JetStream publisher (@nats-io/transport-node and @nats-io/jetstream, optional peer
// dependencies): publishes to the message's topic as the subject with the message key as
// Nats-Msg-Id, so the stream's duplicate window absorbs a republish; a message counts as
// published when JetStream acknowledges it. The client reconnects by itself.

import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import { PublishError, type Publisher, type PublishMessage } from '../core/outbox/publisher.ts';
import { LazyConnection } from './lazy-connection.ts';
import { issuesLine, optionalImport } from './optional-import.ts';

export const natsOptionsSchema = z
  .object({
    /** Server URLs, e.g. ['nats://127.0.0.1:4222']. */
    servers: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    /** How long to wait for JetStream's acknowledgement. Default 5 s. */
    ackTimeoutMs: z.number().int().min(1).max(600_000).default(5_000),
    user: z.string().optional(),
    pass: z.string().optional(),
    token: z.string().optional(),
  })
  .strict();
/** Options of natsPublisher: the servers, credentials, and how long to wait for JetStream's acknowledgement (docs/outbox.md, NATS JetStream). */
export type NatsOptions = z.input<typeof natsOptionsSchema>;

interface Open {
  nc: NatsConnection;
  js: JetStreamClient;
  /** The stream API, opened the first time a publish fails in a way it can explain. */
  jsm: () => Promise<JetStreamManager>;
  headers: typeof import('@nats-io/transport-node').headers;
}

/**
 * Why a publish failed, in words that say what to do. With no responder on the subject the
 * client reports "jetstream is not enabled" whether JetStream is off or merely no stream
 * captures the subject; asking for the subject's stream tells the two apart.
 */
async function explain(c: Open, subject: string, err: unknown): Promise<string> {
  const message = err instanceof Error ? err.message : String(err);
  if (!(err instanceof Error) || err.name !== 'JetStreamNotEnabled') return message;
  try {
    await (await c.jsm()).streams.find(subject);
    return message;
  } catch (e) {
    if (e instanceof Error && e.name === 'StreamNotFoundError') {
      return `no stream captures the subject "${subject}": add a stream whose subjects match it (the message is retried until one does)`;
    }
    return message;
  }
}

/** A publisher to NATS JetStream, acknowledged by the stream (the driver is an optional peer dependency). */
export function natsPublisher(options: NatsOptions): Publisher {
  const parsed = natsOptionsSchema.safeParse(options);
  if (!parsed.success) throw issuesLine('NATS publisher', parsed.error.issues);
  const o = parsed.data;
  let closed = false;

  const open = async (): Promise<Open> => {
    const transport = await optionalImport('@nats-io/transport-node', () => import('@nats-io/transport-node'), 'the NATS publisher');
    const jsMod = await optionalImport('@nats-io/jetstream', () => import('@nats-io/jetstream'), 'the NATS publisher');
    const nc = await transport.connect({
      servers: o.servers,
      // Reconnect forever: publishes fail (and are retried) while it is away.
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      ...(o.user === undefined ? {} : { user: o.user }),
      ...(o.pass === undefined ? {} : { pass: o.pass }),
      ...(o.token === undefined ? {} : { token: o.token }),
    });
    void nc.closed().then(() => conn.forget());
    let jsm: Promise<JetStreamManager> | undefined;
    return {
      nc,
      js: jsMod.jetstream(nc, { timeout: o.ackTimeoutMs }),
      jsm: () => (jsm ??= jsMod.jetstreamManager(nc, { timeout: o.ackTimeoutMs })),
      headers: transport.headers,
    };
  };

  const conn = new LazyConnection<Open>('NATS', () => open());

  return {
    async publish(m: PublishMessage, signal: AbortSignal): Promise<void> {
      if (closed) throw new PublishError('retry', 'the NATS publisher is closed');
      const c = await conn.get();
      signal.throwIfAborted();
      const h = c.headers();
      for (const [k, v] of Object.entries(m.headers)) h.set(k, v);
      h.set('Baton-Message-Id', m.id);
      h.set('Baton-Tenant', m.tenantId);
      h.set('Baton-Attempt', String(m.attempt));
      if (m.orderingKey !== null) h.set('Baton-Ordering-Key', m.orderingKey);
      try {
        await c.js.publish(m.topic, JSON.stringify(m.payload ?? null), { msgID: m.messageKey, headers: h, timeout: o.ackTimeoutMs });
      } catch (err) {
        throw new PublishError('retry', `NATS JetStream: ${await explain(c, m.topic, err)}`, { cause: err });
      }
    },
    async close(): Promise<void> {
      closed = true;
      const c = await conn.take();
      await c?.nc.drain().catch(() => c?.nc.close());
    },
  };
}
