// The console's pages in headless Chromium (playwright-core, system /usr/bin/chromium) against
// the real daemon on this file's database: a navigation between the views, a URL for each view
// and filter (the back button included), features not in use folded into "More" until they are,
// scheduled jobs apart from due ones, the chart history kept by the daemon across a reload, and
// every view 375 px wide with nothing past the right edge. Every wait is a Playwright wait or a
// polled condition.

import type { Browser, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { insertJob } from '../helpers/factory.ts';
import { waitFor } from '../helpers/wait.ts';
import { consoleReady, hasChromium, JSON_HEADERS, useConsole, warnIfNoChromium } from './console-browser.ts';

warnIfNoChromium('console-pages.browser.test.ts');

/** The views the navigation names, in its order. */
const NAV = ['overview', 'jobs', 'queues', 'runs', 'schedules', 'outbox', 'flow', 'dlq', 'workers'];

describe.skipIf(!hasChromium)('console pages (headless Chromium)', () => {
  const con = useConsole({ args: ['--queues', 'default:2'], viewport: { width: 1280, height: 900 } });
  const { db } = con;
  let page: Page;
  let base: string;
  let browser: Browser;
  beforeAll(() => {
    ({ page, base, browser } = con);
  });

  /** Ids of the jobs the listing shows. */
  const listed = (p: Page) => p.$$eval('#jobs tbody tr[data-job-id]', (trs) => trs.map((tr) => tr.getAttribute('data-job-id')));

  it('moves between the views from the navigation, each at its own URL; unused features wait under "More" until used', async () => {
    await page.goto(base);
    await consoleReady(page);
    expect(await page.getAttribute('#nav a[data-nav="overview"]', 'aria-current')).toBe('page');
    // Nothing scheduled, no outbox, no limits, no runs yet: folded, and their tiles hidden.
    for (const feature of ['runs', 'schedules', 'outbox', 'flow']) {
      expect(await page.$(`#nav-more-items a[data-nav="${feature}"]`), feature).not.toBeNull();
      expect(await page.isHidden(`#tiles a[data-tile="${feature}"]`), feature).toBe(true);
    }
    for (const view of NAV) {
      if (await page.$(`#nav-more-items a[data-nav="${view}"]`)) await page.click('#nav-more summary');
      await page.click(`#nav a[data-nav="${view}"]`);
      await page.waitForSelector(`.view[data-view="${view}"]:not([hidden])`);
      expect(new URL(page.url()).hash, view).toBe(view === 'overview' ? '#/' : `#/${view}`);
      expect(await page.$$eval('.view:not([hidden])', (els) => els.map((el) => el.getAttribute('data-view'))), view).toEqual([view]);
      expect(await page.getAttribute(`#nav a[data-nav="${view}"]`, 'aria-current'), view).toBe('page');
      expect(await page.title(), view).toMatch(/· Baton console$/);
    }

    // A schedule appears: its view comes out of "More", and the overview shows its tile.
    const res = await fetch(`${base}/api/cron`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ name: 'nightly', cron: '0 3 * * *', timezone: 'UTC', jobType: 'noop' }),
    });
    expect(res.status).toBe(201);
    await page.goto(`${base}/#/`);
    await page.waitForSelector('#nav > a[data-nav="schedules"]', { timeout: 15_000 });
    await page.waitForSelector('#tiles a[data-tile="schedules"]:not([hidden])');
    expect(await page.$('#nav-more-items a[data-nav="outbox"]')).not.toBeNull();
    // The schedule's next fire is said in hours and minutes, never as a count of seconds.
    await page.click('#nav a[data-nav="schedules"]');
    const next = await page.waitForSelector('#schedules tr[data-schedule-id] [data-field="next-fire"]');
    expect(await next.textContent()).toMatch(/in (\d+ h( \d+ min)?|\d+ min( \d+ s)?|\d+ s)$/);
  }, 90_000);

  it('opens every view with no script error and nothing refused by its CSP (no inline script or style)', async () => {
    const p = await browser.newPage();
    const problems: string[] = [];
    p.on('pageerror', (err) => problems.push(`uncaught: ${err.message}`));
    p.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    try {
      for (const view of NAV) {
        // A fresh load each time: the view's first refresh is the one waited for.
        await p.goto('about:blank');
        await p.goto(`${base}/#/${view === 'overview' ? '' : view}`);
        await consoleReady(p);
        await p.waitForSelector(`.view[data-view="${view}"]:not([hidden]) section`);
      }
      expect(await p.$eval('#workers tr[data-worker-id] .bar > span', (el) => el.getAttribute('style') ?? '')).toMatch(/^width: \d+%;$/);
    } finally {
      await p.close();
    }
    expect(problems).toEqual([]);
  }, 60_000);

  it('keeps each filter in the URL: a scheduled job apart from a due one, linkable, and back goes back', async () => {
    // A queue no worker serves, so both stay pending: one due now, one seven hours ahead.
    const due = await insertJob(db.pool, { queue: 'link-q', jobType: 'report' });
    const later = await insertJob(db.pool, { queue: 'link-q', jobType: 'report', runAt: { inMs: 7 * 3_600_000 + 90_000 } });

    await page.goto(`${base}/#/jobs?state=scheduled&queue=link-q`);
    await waitFor(async () => JSON.stringify(await listed(page)) === JSON.stringify([later]), { message: 'only the scheduled job' });
    expect(await page.inputValue('#filter-state')).toBe('scheduled');
    expect(await page.inputValue('#filter-queue')).toBe('link-q');
    expect(await page.textContent(`#jobs tr[data-job-id="${later}"] .state`)).toBe('scheduled');
    expect(await page.textContent(`#jobs tr[data-job-id="${later}"] [data-field="due"]`)).toBe('in 7 h 1 min');

    // Changing the filter in the form changes the URL.
    await page.selectOption('#filter-state', 'pending');
    await page.waitForURL(`${base}/#/jobs?state=pending&queue=link-q`);
    await waitFor(async () => JSON.stringify(await listed(page)) === JSON.stringify([due]), { message: 'only the due job' });
    expect(await page.textContent(`#jobs tr[data-job-id="${due}"] .state`)).toBe('pending');

    await page.goBack();
    await waitFor(async () => JSON.stringify(await listed(page)) === JSON.stringify([later]), { message: 'back to the scheduled one' });
    expect(await page.inputValue('#filter-state')).toBe('scheduled');

    // The overview counts them apart too, and its tiles link to those filters.
    await page.goto(`${base}/#/`);
    await page.waitForSelector('#tiles a[data-tile="scheduled"][data-value="1"]', { timeout: 15_000 });
    expect(await page.getAttribute('#tiles a[data-tile="scheduled"]', 'href')).toBe('#/jobs?state=scheduled');
    // And so does the queues view: pending (due) and scheduled columns.
    await page.goto(`${base}/#/queues`);
    await page.waitForSelector('#queues tr[data-queue="link-q"] td[data-state="scheduled"]:has-text("1")', { timeout: 15_000 });
    expect(await page.textContent('#queues tr[data-queue="link-q"] td[data-state="pending"]')).toBe('1');
  }, 60_000);

  it('draws the charts from the daemon: a reload shows the minutes before it, not an empty chart', async () => {
    await page.goto(`${base}/#/`);
    await consoleReady(page);
    const points = () => page.getAttribute('#chart-depth', 'data-points').then(Number);
    await waitFor(async () => (await points()) >= 4, { timeoutMs: 20_000, message: 'four samples in the chart' });
    const first = await page.getAttribute('#charts-section', 'data-first');
    const before = await points();

    await page.reload();
    // The first render after the reload already holds every sample the daemon kept.
    await page.waitForSelector('#chart-depth[data-points]:not([data-points="0"])', { timeout: 15_000 });
    expect(await points()).toBeGreaterThanOrEqual(before);
    expect(await page.getAttribute('#charts-section', 'data-first')).toBe(first);
    expect(await page.textContent('#charts-window')).toMatch(/^last (\d+ min ?)?(\d+ s)? · rates over 10 s windows$/);
  }, 60_000);

  it('has no view wider than a 375 px screen: nothing past the right edge, no sideways scrolling', async () => {
    const dead = await insertJob(db.pool, {
      queue: 'narrow-q',
      jobType: 'a-job-type-with-a-rather-long-name-that-must-wrap',
      state: 'dead_lettered',
      errors: [{ attempt: 1, token: '1', kind: 'terminal', name: 'Error', message: 'no', at: new Date().toISOString() }],
    });
    const narrow = await browser.newPage({ viewport: { width: 375, height: 800 } });
    try {
      for (const hash of ['#/', ...NAV.slice(1).map((v) => `#/${v}`), `#/jobs/${dead}`, '#/runs/1']) {
        await narrow.goto(`${base}/${hash}`);
        await consoleReady(narrow);
        await narrow.waitForSelector('.view:not([hidden]) section');
        const overflow = (await narrow.evaluate(`(() => {
          const wide = [...document.querySelectorAll('body *')].filter((el) => {
            const r = el.getBoundingClientRect();
            return r.width > 0 && r.right > window.innerWidth + 0.5;
          });
          return { scrollWidth: document.documentElement.scrollWidth, wide: wide.slice(0, 3).map((el) => el.tagName + '#' + el.id + '.' + el.className) };
        })()`)) as { scrollWidth: number; wide: string[] };
        expect(overflow, hash).toEqual({ scrollWidth: 375, wide: [] });
      }
    } finally {
      await narrow.close();
    }
  }, 90_000);
});
