// The admin console in headless Chromium (playwright-core, system /usr/bin/chromium,
// never a downloaded browser) against the real daemon on this file's database:
// "Enqueue demo jobs" moves the whole state machine, replay and cancel work, a 409
// is shown; a page on another origin cannot change state and a foreign Host is refused.
// The console's pages (navigation, linkable filters, the chart history) are
// console-pages.browser.test.ts's.

import { mkdir } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { openApiKeys } from '../../src/create-api-keys.ts';
import { insertJob } from '../helpers/factory.ts';
import { waitFor } from '../helpers/wait.ts';
import { hasChromium, JSON_HEADERS, useConsole, warnIfNoChromium, withDaemon } from './console-browser.ts';
import { REPO_ROOT } from './daemon-process.ts';

warnIfNoChromium('console.browser.test.ts');

describe.skipIf(!hasChromium)('admin console (headless Chromium)', () => {
  const con = useConsole({
    // Quick retries so boom spends its budget of 3 within a couple of seconds.
    env: { BATON_BACKOFF_BASE_MS: '50', BATON_BACKOFF_CAP_MS: '200' },
    viewport: { width: 1400, height: 1100 },
  });
  const { db } = con;
  let page: Page;
  let base: string;
  beforeAll(() => {
    ({ page, base } = con);
  });

  it('shows the demo moving through every state, replays a dead letter and shows a 409 plainly', async () => {
    await page.goto(base);
    await page.waitForSelector('#status[data-status="ok"]', { timeout: 15_000 });
    await page.click('#enqueue-demo');
    await page.waitForSelector('#flash[data-kind="ok"]');

    // poison: dead-lettered at once, 1 attempt. boom: its whole budget of 3.
    await page.click('#nav a[data-nav="dlq"]');
    expect(new URL(page.url()).hash).toBe('#/dlq');
    const poisonRow = '#dlq tr[data-job-type="poison"][data-attempt="1"]';
    await page.waitForSelector(poisonRow, { timeout: 20_000 });
    await page.waitForSelector('#dlq tr[data-job-type="boom"][data-attempt="3"][data-max-attempts="3"]', { timeout: 20_000 });
    // The listing carries the last failure; opening the chain loads the full history.
    const boomLast = await page.textContent('#dlq tr[data-job-type="boom"] [data-field="last-error"]');
    expect(boomLast).toContain('transient');
    await page.click('#dlq tr[data-job-type="boom"] details summary');
    await page.waitForSelector('#dlq tr[data-job-type="boom"] details[open] li[data-attempt="3"]');
    const boomKinds = await page.$$eval('#dlq tr[data-job-type="boom"] li[data-kind]', (lis) =>
      lis.map((li) => li.getAttribute('data-kind')),
    );
    expect(boomKinds).toEqual(['transient', 'transient', 'transient']);

    const poisonId = await page.getAttribute(poisonRow, 'data-job-id');
    expect(poisonId).toMatch(/^\d+$/);
    await page.click(`${poisonRow} button[data-action="replay"]`);
    // Replayed: runs again, poison is terminal on its (fresh) first attempt, back in the DLQ with replays = 1.
    await page.waitForSelector(`#dlq tr[data-job-id="${poisonId}"][data-replay-count="1"]`, { timeout: 20_000 });
    const row = await db.query('SELECT state, replay_count, attempt FROM baton.jobs WHERE id = $1', [poisonId]);
    expect(row.rows[0]).toEqual({ state: 'dead_lettered', replay_count: 1, attempt: 1 });

    // Every demo job has reached its final state; the delayed noop ran after its 5 s delay.
    await waitFor(
      async () => {
        const r = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE state NOT IN ('succeeded', 'dead_lettered')`);
        return r.rows[0].n === 0;
      },
      { timeoutMs: 20_000, message: 'all demo jobs final' },
    );
    // Boom's failure chain stays open across refreshes (every attempt listed).
    await page.waitForSelector('#dlq tr[data-job-type="boom"] details[open] li[data-attempt="3"]');
    await page.click('#nav a[data-nav="queues"]');
    await page.waitForSelector('#queues tr[data-queue="default"] td[data-state="succeeded"]:has-text("6")', { timeout: 10_000 });

    // The overview for the README: tiles, the last minutes of the charts, the queues, with demo orders waiting.
    await page.click('#nav a[data-nav="overview"]');
    await page.click('#start-demo-orders');
    await page.waitForSelector('#tiles a[data-tile="runs"][data-value="3"]', { timeout: 15_000 });
    await waitFor(async () => Number(await page.getAttribute('#chart-throughput', 'data-points')) >= 5, { message: 'five samples' });
    await page.waitForSelector('#tiles a[data-tile="dlq"][data-value="2"]');
    await page.waitForSelector('#flash:not(.show)', { state: 'attached', timeout: 10_000 });
    // The committed README screenshot is refreshed only on request, so a test run leaves the tree clean.
    const shotDir = process.env.BATON_UPDATE_SCREENSHOT === '1' ? path.join(REPO_ROOT, 'results') : os.tmpdir();
    await mkdir(shotDir, { recursive: true });
    await page.setViewportSize({ width: 1280, height: 760 });
    await page.screenshot({ path: path.join(shotDir, 'console.png') });
    await page.setViewportSize({ width: 1400, height: 1100 });

    // A stale button: pause refresh, make a succeeded sleep job live behind the page's back, click replay.
    await page.click('#nav a[data-nav="jobs"]');
    await page.waitForSelector('#jobs tr[data-job-type="sleep"][data-state="succeeded"]');
    await page.uncheck('#auto-refresh');
    const sleepId = await page.getAttribute('#jobs tr[data-job-type="sleep"][data-state="succeeded"]', 'data-job-id');
    const res = await fetch(`${base}/api/jobs/${sleepId}/replay`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    await page.click(`#jobs tr[data-job-id="${sleepId}"] button[data-action="replay"]`);
    await page.waitForSelector('#flash[data-kind="error"]');
    expect(await page.textContent('#flash')).toMatch(/409 JOB_STATE_CONFLICT/);
  }, 120_000);

  it('cancels a pending job from its button; a page on another origin cannot cancel or replay', async () => {
    const created = await fetch(`${base}/api/jobs`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ jobType: 'noop', delayMs: 3_600_000 }),
    });
    const { id } = (await created.json()) as { id: string };
    const deadBefore = (await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE state = 'dead_lettered'`)).rows[0].n;
    expect(deadBefore).toBeGreaterThan(0);

    // The attacker's page: another origin (another port) whose script sends the simple
    // requests any page may send without asking, at the job and at the dead-letter queue.
    const evil = http.createServer((_req, res) => res.end('<!doctype html><title>elsewhere</title>'));
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    const evilPage = await con.browser.newPage();
    try {
      await evilPage.goto(`http://127.0.0.1:${(evil.address() as { port: number }).port}/`);
      const answers = ['/cancel', '/dlq/replay'].map((suffix) => evilPage.waitForResponse((r) => r.url().endsWith(suffix)));
      await evilPage.evaluate(
        async ([target, jobId]) => {
          const simple = { method: 'POST', mode: 'no-cors' as const, headers: { 'Content-Type': 'text/plain' }, body: '{}' };
          await fetch(`${target}/api/jobs/${jobId}/cancel`, simple);
          await fetch(`${target}/api/dlq/replay`, { ...simple, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
        },
        [base, id] as const,
      );
      expect(await Promise.all(answers.map(async (a) => (await a).status()))).toEqual([403, 403]);
    } finally {
      await evilPage.close();
      evil.close();
    }
    expect((await db.query('SELECT state FROM baton.jobs WHERE id = $1', [id])).rows[0].state).toBe('pending');
    expect((await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE state = 'dead_lettered'`)).rows[0].n).toBe(deadBefore);

    // The console itself, same origin, cancels it.
    await page.check('#auto-refresh');
    await page.goto(`${base}/#/jobs`);
    const cancel = `#jobs tr[data-job-id="${id}"] button[data-action="cancel"]`;
    await page.waitForSelector(cancel, { timeout: 15_000 });
    await page.click(cancel);
    await page.waitForSelector(`#jobs tr[data-job-id="${id}"][data-state="cancelled"]`, { timeout: 15_000 });
    expect((await db.query('SELECT state FROM baton.jobs WHERE id = $1', [id])).rows[0].state).toBe('cancelled');
  }, 60_000);

  it('answers its loopback names and refuses a foreign Host (DNS rebinding), unless BATON_ALLOWED_HOSTS names it', async () => {
    const status = (url: string, host: string) =>
      new Promise<number>((resolve, reject) => {
        const u = new URL(url);
        http
          .get({ host: u.hostname, port: u.port, path: '/api/queues', headers: { host } }, (res) => {
            res.resume();
            resolve(res.statusCode!);
          })
          .on('error', reject);
      });
    const { port } = new URL(base);
    expect(await status(base, `localhost:${port}`)).toBe(200);
    expect(await status(base, `evil.example:${port}`)).toBe(421);
    expect(await status(base, 'baton.test')).toBe(421);

    await withDaemon(db, ['--queues', ''], { BATON_ALLOWED_HOSTS: 'baton.test' }, async (named) => {
      expect(await status(named, 'baton.test')).toBe(200);
      expect(await status(named, `evil.example:${new URL(named).port}`)).toBe(421);
    });
  }, 60_000);

  it('shows flow control: a queue cap with what runs under it, and depth per tenant', async () => {
    const put = await fetch(`${base}/api/flow/queues/flow-demo`, {
      method: 'PUT',
      headers: JSON_HEADERS,
      body: JSON.stringify({ concurrencyLimit: 2, rateLimit: { limit: 10, periodMs: 1000 } }),
    });
    expect(put.status).toBe(200);
    const enq = await fetch(`${base}/api/jobs`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ jobType: 'nobody-handles', queue: 'flow-demo', tenantId: 'acme' }),
    });
    expect(enq.status).toBe(201);
    await page.goto(`${base}/#/flow`);
    const row = '#flow-limits tr[data-flow-queue="flow-demo"]';
    await page.waitForSelector(row, { timeout: 15_000 });
    expect(await page.textContent(row)).toContain('10 / 1000 ms');
    await page.waitForSelector('#flow-tenants tr[data-flow-tenant="flow-demo/acme"]');
    expect(await page.textContent('#flow-tenants tr[data-flow-tenant="flow-demo/acme"]')).toMatch(/acme\s*1\s*1\s*0/);
  });

  it('asks for the bearer token when the server requires one, and keeps it in the page only', async () => {
    const token = 'console-test-token-123';
    // A second, producer-only daemon on the same database, with a token.
    await withDaemon(db, ['--queues', ''], { BATON_API_TOKEN: token }, async (guarded) => {
      const ctx = await con.browser.newContext();
      const p = await ctx.newPage();
      await p.goto(guarded);
      await p.waitForSelector('#status[data-status="error"]');
      expect(await p.textContent('#status')).toMatch(/401 UNAUTHORIZED/);
      await p.waitForSelector('#token-box.show');
      await p.fill('#token-input', token);
      await p.click('#token-save');
      await p.waitForSelector('#status[data-status="ok"]');
      await p.click('#nav a[data-nav="queues"]');
      await p.waitForSelector('#queues tr[data-queue="default"]');
      expect(await p.evaluate('document.body.dataset.scope')).toBe('admin');
      // Nothing stored: a reload asks again.
      expect(await p.evaluate('JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie')).not.toContain(token);
      await p.reload();
      await p.waitForSelector('#status[data-status="error"]');
      await p.waitForSelector('#token-box.show');
      await ctx.close();
    });
  }, 60_000);
  it('with a tenant key shows that tenant only, and hides the fleet-wide panels', async () => {
    const acmeJob = await insertJob(db, { tenantId: 'acme', jobType: 'acme.report' });
    const otherJob = await insertJob(db, { tenantId: 'globex', jobType: 'globex.report' });
    const keys = openApiKeys({ pool: db.pool, schema: db.schema });
    const { key, token } = await keys.create({ tenantId: 'acme' });
    try {
      await withDaemon(db, ['--queues', ''], {}, async (keyed) => {
        const ctx = await con.browser.newContext();
        const p = await ctx.newPage();
        await p.goto(keyed);
        await p.waitForSelector('#token-box.show');
        await p.fill('#token-input', token);
        await p.click('#token-save');
        await p.waitForSelector('#status[data-status="ok"]');
        // A tenant key has no overview of the fleet: its jobs are where it lands.
        await p.waitForSelector(`#jobs tr[data-job-id="${acmeJob}"]`);
        expect(new URL(p.url()).hash).toBe('#/jobs');
        expect(await p.$(`#jobs tr[data-job-id="${otherJob}"]`)).toBeNull();
        expect(await p.evaluate('document.body.dataset.scope')).toBe('tenant');
        expect(await p.isVisible('#nav a[data-nav="queues"]')).toBe(false);
        await p.goto(`${keyed}/#/queues`);
        expect(await p.isVisible('#queues-section')).toBe(false);
        expect(await p.isVisible('#scope-note')).toBe(true);
        await ctx.close();
      });
    } finally {
      // The file's first daemon shares this database: leave it open, as it started.
      await keys.revoke(key.id);
      await keys.close();
    }
  }, 60_000);
});
