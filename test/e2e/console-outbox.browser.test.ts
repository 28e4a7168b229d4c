// The console's outbox view in headless Chromium against the real daemon, configured by
// BATON_OUTBOX_PUBLISHERS with a webhook to a receiver in this file: a message the receiver
// refuses (410) is shown dead-lettered with its error; replayed from its row once the receiver
// accepts, it is delivered and counted as published. Assertions read the database and the DOM.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../../src/index.ts';
import { waitFor } from '../helpers/wait.ts';
import { hasChromium, useConsole, warnIfNoChromium } from './console-browser.ts';

warnIfNoChromium('console-outbox.browser.test.ts');
const SECRET = 'whsec_Y29uc29sZS10ZXN0LXNlY3JldC1vZi0yNC1ieXRlcw==';

describe.skipIf(!hasChromium)('console outbox view (headless Chromium)', () => {
  let receiver: http.Server;
  let accept = false;
  const delivered: Array<{ key: string; verified: boolean }> = [];

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (!accept) {
          res.writeHead(410).end();
          return;
        }
        const body = Buffer.concat(chunks).toString('utf8');
        const verified = verifyWebhookSignature({
          secret: SECRET,
          body,
          id: req.headers['webhook-id'] as string,
          timestamp: req.headers['webhook-timestamp'] as string,
          signature: req.headers['webhook-signature'] as string,
        });
        delivered.push({ key: req.headers['baton-message-key'] as string, verified });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  });
  // Registered first, so the receiver is up before the daemon starts and closed after it stops.
  afterAll(async () => {
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  const con = useConsole({
    env: () => {
      const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      return { BATON_OUTBOX_PUBLISHERS: JSON.stringify({ hooks: { type: 'webhook', url: hook, secret: SECRET } }) };
    },
    viewport: { width: 1400, height: 1000 },
    openAt: '#/outbox',
  });
  const { db } = con;
  let page: Page;
  beforeAll(() => {
    ({ page } = con);
  });

  it('shows a refused message dead-lettered with its error, replays it from its row, and counts it published', async () => {
    const { rows } = await db.query(
      `INSERT INTO baton.outbox (destination, topic, message_key, max_attempts) VALUES ('hooks', 'order.placed', 'console-1', 5) RETURNING id::text`,
    );
    const id = rows[0].id as string;
    const row = await page.waitForSelector(`#outbox-dlq tr[data-outbox-id="${id}"]`, { timeout: 15_000 });
    expect(await row.textContent()).toContain('webhook');
    expect(await row.textContent()).toContain('answered 410');
    expect(await page.textContent('#outbox-destinations tr[data-destination="hooks"] [data-field="dead_lettered"]')).toBe('1');

    accept = true;
    await page.click(`button[data-outbox-replay="${id}"]`);
    await waitFor(async () => (await db.query('SELECT state FROM baton.outbox WHERE id = $1', [id])).rows[0]?.state === 'published', {
      message: 'the replayed message to be published',
    });
    expect(delivered).toEqual([{ key: 'console-1', verified: true }]);
    await page.waitForSelector('#outbox-destinations tr[data-destination="hooks"] [data-field="published"]:has-text("1")', {
      timeout: 15_000,
    });
    await page.waitForSelector(`#outbox-dlq tr[data-outbox-id="${id}"]`, { state: 'detached', timeout: 15_000 });
  });
});
