// /api/outbox through the typed client against a real server and relay: stats, listing,
// reading, replaying one message (404 unknown, 409 pending) and a page of dead letters, the
// tenant filter, bad input (400), and the outbox metrics.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PublishError, type PublishMessage } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { type ApiHarness, errorCode, JSON_HEADERS, okJson, startApi } from './harness.ts';

const db = useTestDatabase();
let api: ApiHarness;
let reject = true;
const published: PublishMessage[] = [];

beforeAll(async () => {
  api = await startApi(db, {
    baton: {
      outbox: {
        backoffBaseMs: 1,
        backoffCapMs: 5,
        pollIntervalMs: 50,
        publishers: {
          hooks: {
            publish: async (m) => {
              if (reject) throw new PublishError('reject', 'no thanks');
              published.push(m);
            },
            close: async () => undefined,
          },
        },
      },
    },
  });
});
afterAll(async () => {
  await api?.close();
});

describe('/api/outbox', () => {
  it('lists, reads and replays messages; counts them; 404, 409 and 400 where due', async () => {
    const ob = api.client.api.outbox;
    const recorded = await api.baton.outbox.recordMany([
      { destination: 'hooks', topic: 't', messageKey: 'a', tenantId: 'acme' },
      { destination: 'hooks', topic: 't', messageKey: 'b', tenantId: 'acme' },
      { destination: 'hooks', topic: 't', messageKey: 'c', tenantId: 'other' },
      { destination: 'nowhere', topic: 't', messageKey: 'd', tenantId: 'acme' },
    ]);
    await waitFor(async () => (await okJson(ob.stats.$get({ query: {} }))).totals.dead_lettered === 3);
    const stats = await okJson(ob.stats.$get({ query: {} }));
    expect(stats.totals).toEqual({ pending: 1, published: 0, dead_lettered: 3 });
    expect(stats.relay).toMatchObject({ deadLettered: 3 });
    expect(stats.oldestPendingAgeSeconds).toBeGreaterThanOrEqual(0);
    const acme = await okJson(ob.stats.$get({ query: { tenantId: 'acme' } }));
    expect(acme.totals).toEqual({ pending: 1, published: 0, dead_lettered: 2 });

    const dead = await okJson(ob.messages.$get({ query: { state: 'dead_lettered', tenantId: 'acme' } }));
    expect(dead.messages.map((m) => m.messageKey)).toEqual(['b', 'a']);
    expect(dead.messages[0]).toMatchObject({ deadLetterReason: 'rejected', lastError: { name: 'PublishError', message: 'no thanks' } });

    const one = await ob.messages[':id'].$get({ param: { id: recorded[0]!.message.id }, query: {} });
    expect((await okJson(one)).messageKey).toBe('a');
    // Another tenant's message, an unknown id and a malformed one are all not found.
    const elsewhere = await ob.messages[':id'].$get({ param: { id: recorded[2]!.message.id }, query: { tenantId: 'acme' } });
    expect([elsewhere.status, await errorCode(elsewhere)]).toEqual([404, 'OUTBOX_MESSAGE_NOT_FOUND']);
    for (const id of ['999999', 'x1']) {
      const res = await ob.messages[':id'].$get({ param: { id }, query: {} });
      expect([res.status, await errorCode(res)]).toEqual([404, 'OUTBOX_MESSAGE_NOT_FOUND']);
    }
    const pending = await ob.messages[':id'].replay.$post({ param: { id: recorded[3]!.message.id }, query: {} });
    expect([pending.status, await errorCode(pending)]).toEqual([409, 'OUTBOX_STATE_CONFLICT']);
    const wrongTenant = await ob.messages[':id'].replay.$post({ param: { id: recorded[2]!.message.id }, query: { tenantId: 'acme' } });
    expect(wrongTenant.status).toBe(404);

    reject = false;
    const replayed = await ob.messages[':id'].replay.$post({ param: { id: recorded[0]!.message.id }, query: {} });
    expect(replayed.status).toBe(200);
    expect(await replayed.json()).toMatchObject({ state: 'pending', replayCount: 1, attempt: 0 });
    const page = await ob.dlq.replay.$post({ query: { limit: '5', tenantId: 'acme' } });
    expect((await okJson(page)).messages.map((m) => m.messageKey)).toEqual(['b']);
    await waitFor(() => published.length === 2, { message: 'a and b published' });
    expect(published.map((m) => m.messageKey).sort()).toEqual(['a', 'b']);
    const left = await okJson(ob.messages.$get({ query: { state: 'dead_lettered' } }));
    expect(left.messages.map((m) => m.messageKey)).toEqual(['c']);

    for (const q of ['state=gone', 'limit=0', 'limit=501', 'surprise=1', 'destination=a%20b']) {
      const res = await api.raw(`/api/outbox/messages?${q}`);
      expect([q, res.status, await errorCode(res)]).toEqual([q, 400, 'INVALID_ARGUMENT']);
    }
    const tooMany = await api.raw('/api/outbox/dlq/replay?limit=1001', { method: 'POST', headers: JSON_HEADERS });
    expect(tooMany.status).toBe(400);
  });

  it('exports outbox metrics: messages by state, oldest pending age, outcomes and publish latency', async () => {
    await waitFor(async () => (await api.metrics.render()).includes('baton_outbox_published_total{destination="hooks"} 2'));
    const text = await api.metrics.render();
    expect(text).toContain('baton_outbox_messages{destination="hooks",state="published"} 2');
    expect(text).toContain('baton_outbox_messages{destination="nowhere",state="pending"} 1');
    expect(text).toMatch(/baton_outbox_dead_lettered_total\{destination="hooks",reason="rejected"\} 3/);
    expect(text).toMatch(/baton_outbox_publish_seconds_count\{destination="hooks"\} 2/);
    expect(text).toMatch(/baton_outbox_oldest_pending_age_seconds \d/);
  });
});
