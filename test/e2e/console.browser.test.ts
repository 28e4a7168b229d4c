// The admin console in headless Chromium (playwright-core, system /usr/bin/chromium,
// never a downloaded browser) against the real daemon on this file's database:
// "Enqueue demo jobs" moves the whole state machine, replay works, a 409 is shown.

import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { REPO_ROOT, freePort, runBaton, waitExit, waitReady, type DaemonProcess } from './daemon-process.ts';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) {
  console.warn(`\n*** SKIPPED console.browser.test.ts: ${CHROMIUM} is missing (apt-get install -y chromium) ***\n`);
}

describe.skipIf(!hasChromium)('admin console (headless Chromium)', () => {
  const db = useTestDatabase();
  let daemon: DaemonProcess;
  let browser: Browser;
  let page: Page;
  let base: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    daemon = runBaton(['serve', '--port', String(port)], {
      DATABASE_URL: db.url,
      // Quick retries so boom spends its budget of 3 within a couple of seconds.
      BATON_BACKOFF_BASE_MS: '50',
      BATON_BACKOFF_CAP_MS: '200',
      LOG_LEVEL: 'warn',
    });
    await waitReady(daemon, base);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
  });

  afterAll(async () => {
    await browser?.close();
    if (daemon) {
      daemon.child.kill('SIGTERM');
      await waitExit(daemon, 30_000).catch(() => daemon.kill());
    }
  });

  it('shows the demo moving through every state, replays a dead letter and shows a 409 plainly', async () => {
    await page.goto(base);
    await page.waitForSelector('#status[data-status="ok"]', { timeout: 15_000 });
    await page.click('#enqueue-demo');
    await page.waitForSelector('#flash[data-kind="ok"]');

    // poison: dead-lettered at once, 1 attempt. boom: its whole budget of 3.
    const poisonRow = '#dlq tr[data-job-type="poison"][data-attempt="1"]';
    await page.waitForSelector(poisonRow, { timeout: 20_000 });
    await page.waitForSelector('#dlq tr[data-job-type="boom"][data-attempt="3"][data-max-attempts="3"]', { timeout: 20_000 });
    // The listing carries the last failure; opening the chain loads the full history.
    const boomLast = await page.textContent('#dlq tr[data-job-type="boom"] [data-field="last-error"]');
    expect(boomLast).toContain('transient');
    await page.click('#dlq tr[data-job-type="boom"] details summary');
    await page.waitForSelector('#dlq tr[data-job-type="boom"] details[open] li[data-attempt="3"]');
    const boomKinds = await page.$$eval('#dlq tr[data-job-type="boom"] li[data-kind]', (lis) => lis.map((li) => li.getAttribute('data-kind')));
    expect(boomKinds).toEqual(['transient', 'transient', 'transient']);
    await page.waitForSelector('#queues tr[data-queue="default"] td[data-state="succeeded"]');

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
    await page.waitForSelector('#queues tr[data-queue="default"] td[data-state="succeeded"]:text("6")', { timeout: 10_000 });

    // Boom's failure chain stays open across refreshes for the README screenshot (every attempt listed).
    await page.waitForSelector('#dlq tr[data-job-type="boom"] details[open] li[data-attempt="3"]');
    // The committed README screenshot is refreshed only on request, so a test run leaves the tree clean.
    const shotDir = process.env.BATON_UPDATE_SCREENSHOT === '1' ? path.join(REPO_ROOT, 'results') : os.tmpdir();
    await mkdir(shotDir, { recursive: true });
    await page.screenshot({ path: path.join(shotDir, 'console.png'), fullPage: true });

    // A stale button: pause refresh, make a succeeded sleep job live behind the page's back, click replay.
    await page.uncheck('#auto-refresh');
    const sleepId = await page.getAttribute('#jobs tr[data-job-type="sleep"][data-state="succeeded"]', 'data-job-id');
    const res = await fetch(`${base}/api/jobs/${sleepId}/replay`, { method: 'POST' });
    expect(res.status).toBe(200);
    await page.click(`#jobs tr[data-job-id="${sleepId}"] button[data-action="replay"]`);
    await page.waitForSelector('#flash[data-kind="error"]');
    expect(await page.textContent('#flash')).toMatch(/409 JOB_STATE_CONFLICT/);
  }, 120_000);

  it('asks for the bearer token when the server requires one, and keeps it in localStorage', async () => {
    const port = await freePort();
    const guarded = `http://127.0.0.1:${port}`;
    const token = 'console-test-token-123';
    // A second, producer-only daemon on the same database, with a token.
    const d = runBaton(['serve', '--port', String(port), '--queues', ''], { DATABASE_URL: db.url, BATON_API_TOKEN: token, LOG_LEVEL: 'warn' });
    try {
      await waitReady(d, guarded);
      const ctx = await browser.newContext();
      const p = await ctx.newPage();
      await p.goto(guarded);
      await p.waitForSelector('#status[data-status="error"]');
      expect(await p.textContent('#status')).toMatch(/401 UNAUTHORIZED/);
      await p.waitForSelector('#token-box.show');
      await p.fill('#token-input', token);
      await p.click('#token-save');
      await p.waitForSelector('#status[data-status="ok"]');
      await p.waitForSelector('#queues tr[data-queue="default"]');
      expect(await p.evaluate("localStorage.getItem('baton.apiToken')")).toBe(token);
      await ctx.close();
    } finally {
      d.child.kill('SIGTERM');
      expect(await waitExit(d, 30_000)).toBe(0);
    }
  }, 60_000);
});
