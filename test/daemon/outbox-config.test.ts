// BATON_OUTBOX_PUBLISHERS: JSON inline or @file, validated at start-up with the publishers'
// own option schemas; a bad value is a ConfigError naming the setting, without its secrets.

import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/daemon/env.ts';
import { buildPublishers } from '../../src/daemon/outbox-config.ts';

const SECRET = 'whsec_dG9wLXNlY3JldC12YWx1ZS0xMjM0NTY3ODkwMTI=';
const good = {
  hooks: { type: 'webhook', url: 'http://127.0.0.1:9/hook', secret: SECRET },
  rabbit: { type: 'rabbitmq', url: 'amqp://guest:guest@127.0.0.1:5672', exchange: 'events' },
  js: { type: 'nats', servers: ['nats://127.0.0.1:4222'] },
};

describe('BATON_OUTBOX_PUBLISHERS', () => {
  it('reads publishers inline or from a file, and builds one per destination', async () => {
    const inline = loadConfig({ BATON_OUTBOX_PUBLISHERS: JSON.stringify(good) });
    expect(Object.keys(inline.outbox.publishers)).toEqual(['hooks', 'rabbit', 'js']);
    expect(inline.outbox.relay).toBe(true);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-outbox-'));
    writeFileSync(path.join(dir, 'outbox.json'), JSON.stringify(good));
    const fromFile = loadConfig({ BATON_OUTBOX_PUBLISHERS: '@outbox.json', BATON_OUTBOX_RELAY: 'false' }, {}, dir);
    expect(fromFile.outbox).toEqual({ ...inline.outbox, relay: false });
    const built = buildPublishers(fromFile.outbox.publishers);
    expect(Object.keys(built)).toEqual(['hooks', 'rabbit', 'js']);
    await Promise.all(Object.values(built).map((p) => p.close()));
    expect(loadConfig({}).outbox).toEqual({ publishers: {}, relay: true });
  });

  it('refuses a bad value naming the setting and what is wrong, never echoing a secret', () => {
    const bad: Array<[string, RegExp]> = [
      ['{not json', /is not valid JSON/],
      [JSON.stringify({ hooks: { ...good.hooks, type: 'smtp' } }), /hooks\.type/],
      [JSON.stringify({ hooks: { ...good.hooks, url: 'ftp://x' } }), /hooks\.url/],
      [JSON.stringify({ hooks: { ...good.hooks, surprise: 1 } }), /surprise/],
      // A secret of the old scheme: the message says what a secret is now (and does not echo it).
      [JSON.stringify({ hooks: { ...good.hooks, secret: 'old-plain-secret-1234' } }), /hooks\.secret: must be whsec_/],
      [JSON.stringify({ 'bad name': good.hooks }), /bad name/],
      [JSON.stringify({ rabbit: { ...good.rabbit, url: 'http://x' } }), /rabbit\.url/],
      ['@/no/such/file.json', /cannot read/],
    ];
    for (const [value, why] of bad) {
      let err: unknown;
      try {
        loadConfig({ BATON_OUTBOX_PUBLISHERS: value });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).setting).toBe('BATON_OUTBOX_PUBLISHERS');
      expect((err as Error).message).toMatch(/BATON_OUTBOX_PUBLISHERS \(--outbox-publishers\)/);
      expect((err as Error).message).toMatch(why);
      expect((err as Error).message).not.toContain(SECRET);
      expect((err as Error).message).not.toContain('old-plain-secret-1234');
    }
  });
});
