// The console of a daemon over two clusters (BATON_CLUSTERS) in headless Chromium: the job
// listing shows `<cluster>:<id>` ids, a job page opens by such an id (from the URL, the listing
// and the search box) and shows that cluster's job although both clusters number their jobs
// alike, and an action on the page reaches the job's own cluster only.

import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { CHROMIUM, consoleReady, hasChromium, JSON_HEADERS, launchChromium, waitVisible, warnIfNoChromium } from './console-browser.ts';
import { type DaemonProcess, freePort, runBaton, waitExit, waitReady } from './daemon-process.ts';

warnIfNoChromium('console-sharded.browser.test.ts');

const a = useTestDatabase();
const b = useTestDatabase();

describe.skipIf(!hasChromium)(`console over two clusters (headless Chromium, ${CHROMIUM})`, () => {
  let daemon: DaemonProcess | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let base: string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    // Produce only: the jobs stay pending, so the page has an action to take on them.
    daemon = runBaton(['serve', '--port', String(port), '--queues='], {
      BATON_CLUSTERS: `a=${a.url},b=${b.url}`,
      BATON_QUEUE_ROUTES: 'emails=a,reports=b',
      LOG_LEVEL: 'warn',
    });
    await waitReady(daemon, base);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    if (daemon) {
      daemon.child.kill('SIGTERM');
      await waitExit(daemon, 30_000).catch(() => daemon?.kill());
    }
  });

  const enqueue = async (queue: string) => {
    const res = await fetch(`${base}/api/jobs`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ jobType: 'noop', queue }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { id: string }).id;
  };
  const stateIn = async (db: typeof a, id: string) => (await db.query('SELECT state FROM baton.jobs WHERE id = $1', [id])).rows[0]?.state;

  it('opens and acts on a job by <cluster>:<id> from the URL, the listing and the search box', async () => {
    const onA = await enqueue('emails');
    const onB = await enqueue('reports');
    expect([onA.split(':')[0], onB.split(':')[0]]).toEqual(['a', 'b']);
    const [localA, localB] = [onA.split(':')[1] as string, onB.split(':')[1] as string];

    // Straight from a URL.
    await page.goto(`${base}/#/jobs/${onB}`);
    await consoleReady(page);
    await waitVisible(page, `#job-detail[data-job-id="${onB}"][data-state="pending"]`, daemon);
    expect(await page.textContent('#detail-id')).toBe(`#${onB}`);
    expect(await page.textContent('#detail-body')).toContain('reports');

    // The listing shows both clusters' jobs by their cluster ids; its link opens the other one.
    await page.goto(`${base}/#/jobs`);
    await waitFor(
      async () => {
        const ids = await page.$$eval('#jobs tbody tr[data-job-id]', (trs) => trs.map((tr) => tr.getAttribute('data-job-id')));
        return [...ids].sort().join(',') === [onA, onB].sort().join(',');
      },
      { message: 'the listing to show both clusters’ jobs' },
    );
    await page.click(`#jobs tr[data-job-id="${onA}"] a[data-job-link="${onA}"]`);
    await waitVisible(page, `#job-detail[data-job-id="${onA}"][data-state="pending"]`, daemon);
    expect(await page.textContent('#detail-body')).toContain('emails');

    // The search box takes a cluster id, and still refuses what is no id.
    await page.fill('#search-id', onB);
    await page.press('#search-id', 'Enter');
    await waitVisible(page, `#job-detail[data-job-id="${onB}"][data-state="pending"]`, daemon);
    expect(new URL(page.url()).hash).toBe(`#/jobs/${onB}`);
    await page.fill('#search-id', 'B:1');
    await page.press('#search-id', 'Enter');
    await waitVisible(page, '#flash[data-kind="error"]', daemon);
    expect(await page.textContent('#flash')).toMatch(/not a job id/);

    // Cancel from the page: the job of cluster b is cancelled, cluster a's job is untouched (even when both have the same local id).
    await page.click(`#job-detail[data-job-id="${onB}"] button[data-action="cancel"]`);
    await waitVisible(page, `#job-detail[data-job-id="${onB}"][data-state="cancelled"]`, daemon);
    expect(await stateIn(b, localB)).toBe('cancelled');
    expect(await stateIn(a, localA)).toBe('pending');
  }, 90_000);
});
