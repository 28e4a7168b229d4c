// The NATS JetStream publisher against the real server: each message lands in the stream with
// the message key as Nats-Msg-Id, so a republish inside the duplicate window is absorbed by
// JetStream; one ordering key's backlog lands in record order at full speed; a subject no
// stream captures is retried until one does; a reset connection is re-established by the client.

import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, nanos } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { natsPublisher } from '../../src/index.ts';
import { FaultProxy } from '../chaos/fault-proxy.ts';
import { brokerAvailable, NATS_URL, uniqueName } from '../helpers/brokers.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { outboxRow, outboxStates, useOutboxEngines } from './harness.ts';

const available = await brokerAvailable('NATS JetStream', NATS_URL);
const db = useTestDatabase();
const fast = { backoffBaseMs: 1, backoffCapMs: 50, pollIntervalMs: 50 };

describe.skipIf(!available)('NATS JetStream publisher (real server)', () => {
  const engines = useOutboxEngines(db);
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const streams: string[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: NATS_URL });
    jsm = await jetstreamManager(nc);
  });
  afterAll(async () => {
    for (const s of streams) await jsm?.streams.delete(s).catch(() => undefined);
    await nc?.close();
  });

  /** A stream of this test capturing `<subject>.>`. */
  async function stream(subject: string) {
    const name = uniqueName('BATON_TEST').replace(/[^A-Za-z0-9_]/g, '_');
    streams.push(name);
    await jsm.streams.add({ name, subjects: [`${subject}.>`], duplicate_window: nanos(120_000) });
    return name;
  }
  const count = async (name: string) => (await jsm.streams.info(name)).state.messages;

  it('lands every message once with Nats-Msg-Id = messageKey; a replayed (republished) message is absorbed as a duplicate', async () => {
    const subject = uniqueName('baton.test').replaceAll('.', '_');
    const name = await stream(subject);
    const baton = await engines.start({ outbox: { publishers: { js: natsPublisher({ servers: NATS_URL }) }, ...fast } });
    const keys = Array.from({ length: 30 }, (_, i) => `evt-${i}`);
    const recorded = await baton.outbox.recordMany(
      keys.map((k, i) => ({
        destination: 'js',
        topic: `${subject}.created`,
        payload: { i },
        messageKey: k,
        headers: { 'X-Kind': 'test' },
      })),
    );
    await waitFor(async () => (await outboxStates(db)).published === 30);
    expect(await count(name)).toBe(30);
    const m = await jsm.streams.getMessage(name, { seq: 1 });
    expect(m?.header.get('Nats-Msg-Id')).toBe('evt-0');
    expect(m?.header.get('X-Kind')).toBe('test');
    expect(m?.subject).toBe(`${subject}.created`);
    expect(m?.json()).toEqual({ i: 0 });
    // A republish of the same key (the relay's at-least-once) does not add a message.
    await baton.outbox.replay(recorded[3]!.message.id);
    await waitFor(
      async () =>
        (await outboxRow(db, recorded[3]!.message.id)).state === 'published' &&
        (await outboxRow(db, recorded[3]!.message.id)).replay_count === 1,
    );
    expect(await count(name)).toBe(30);
  });

  it('a backlog on one ordering key lands in the stream in record order, without waiting for a poll', async () => {
    const subject = uniqueName('baton.key').replaceAll('.', '_');
    const name = await stream(subject);
    const baton = engines.create({
      outbox: { publishers: { js: natsPublisher({ servers: NATS_URL }) }, ...fast, pollIntervalMs: 600_000 },
    });
    const keys = Array.from({ length: 300 }, (_, i) => `k-${i}`);
    await baton.outbox.recordMany(keys.map((k) => ({ destination: 'js', topic: `${subject}.k`, messageKey: k, orderingKey: 'one' })));
    await baton.start();
    await waitFor(async () => (await outboxStates(db)).published === 300, { message: '300 messages of one key published' });
    expect(await count(name)).toBe(300);
    const ids: string[] = [];
    for (let seq = 1; seq <= 300; seq++) ids.push((await jsm.streams.getMessage(name, { seq }))?.header.get('Nats-Msg-Id') ?? '');
    expect(ids).toEqual(keys);
  });

  it('a subject no stream captures is retried, then published once a stream exists', async () => {
    const subject = uniqueName('baton.none').replaceAll('.', '_');
    const baton = await engines.start({ outbox: { publishers: { js: natsPublisher({ servers: NATS_URL, ackTimeoutMs: 500 }) }, ...fast } });
    const { message } = await baton.outbox.record({ destination: 'js', topic: `${subject}.x`, messageKey: 'late', maxAttempts: 1000 });
    const retried = await waitFor(async () => {
      const r = await outboxRow(db, message.id);
      return r.attempt >= 2 ? r : null;
    });
    expect(retried.state).toBe('pending');
    // Not "jetstream is not enabled", which the client says for any subject without a responder.
    expect(retried.last_error.message).toBe(
      `NATS JetStream: no stream captures the subject "${subject}.x": add a stream whose subjects match it (the message is retried until one does)`,
    );
    const name = await stream(subject);
    await waitFor(async () => (await outboxRow(db, message.id)).state === 'published', { message: 'published once the stream exists' });
    expect(await count(name)).toBe(1);
  });

  it('survives a reset connection and loses nothing', async () => {
    const subject = uniqueName('baton.reset').replaceAll('.', '_');
    const name = await stream(subject);
    const u = new URL(NATS_URL);
    const proxy = new FaultProxy({ targetHost: u.hostname, targetPort: Number(u.port) });
    await proxy.listen();
    try {
      const baton = await engines.start({
        outbox: { publishers: { js: natsPublisher({ servers: `nats://127.0.0.1:${proxy.port}`, ackTimeoutMs: 1_000 }) }, ...fast },
      });
      await baton.outbox.recordMany(
        Array.from({ length: 10 }, (_, i) => ({ destination: 'js', topic: `${subject}.a`, messageKey: `before-${i}` })),
      );
      await waitFor(async () => (await outboxStates(db)).published === 10);
      proxy.resetAll();
      await baton.outbox.recordMany(
        Array.from({ length: 10 }, (_, i) => ({ destination: 'js', topic: `${subject}.a`, messageKey: `after-${i}` })),
      );
      await waitFor(async () => (await outboxStates(db)).published === 20, {
        message: 'all 20 published after the reset',
        timeoutMs: 20_000,
      });
      expect(proxy.stats().resets).toBeGreaterThan(0);
      expect(await count(name)).toBe(20);
    } finally {
      await proxy.close();
    }
  });
});
