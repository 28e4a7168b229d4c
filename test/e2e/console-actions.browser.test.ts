// The console's operator actions in headless Chromium (playwright-core, system /usr/bin/chromium)
// against the real daemon on this file's database: pause/resume, a scheduled job and run now,
// bulk replay/cancel, the linkable job detail view, search by id, sorting and time filters in
// the URL, the charts, a 375 px wide screen, the demo button only where the demo handlers run,
// and the schedules view. Assertions read the
// database, the API and the DOM; every wait is a Playwright wait or a polled condition.

import type { Browser, Page } from 'playwright-core';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { insertJob } from '../helpers/factory.ts';
import { waitFor } from '../helpers/wait.ts';
import { consoleReady, hasChromium, JSON_HEADERS, useConsole, waitVisible, warnIfNoChromium, withDaemon } from './console-browser.ts';

warnIfNoChromium('console-actions.browser.test.ts');

describe.skipIf(!hasChromium)('console actions (headless Chromium)', () => {
  const con = useConsole({ viewport: { width: 1400, height: 1000 } });
  const { db } = con;
  let page: Page;
  let base: string;
  let browser: Browser;
  beforeAll(() => {
    ({ page, base, browser } = con);
  });

  const stateOf = async (id: string) => (await db.query('SELECT state FROM baton.jobs WHERE id = $1', [id])).rows[0]?.state;
  const enqueue = async (spec: Record<string, unknown>): Promise<string> => {
    const res = await fetch(`${base}/api/jobs`, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(spec) });
    expect(res.status).toBe(201);
    return ((await res.json()) as { id: string }).id;
  };
  /**
   * A row written by hand in a finished state, added to the finished-job counters as the
   * engine's finishing statements would (queue counts read the counters, not the rows).
   */
  const insertFinished = async (
    opts: Parameters<typeof insertJob>[1] & { queue: string; state: 'succeeded' | 'dead_lettered' | 'cancelled' },
  ) => {
    const id = await insertJob(db.pool, opts);
    await db.query(
      `INSERT INTO baton.finished_counts AS s (queue, state, shard, n) VALUES ($1, $2, 0, 1)
        ON CONFLICT (queue, state, shard) DO UPDATE SET n = s.n + 1`,
      [opts.queue, opts.state],
    );
    return id;
  };
  const visible = (selector: string) => waitVisible(page, selector, con.daemon);
  /** Opens a view by its URL, as a link or a bookmark would. */
  const open = (hash: string) => page.goto(`${base}/${hash}`);

  beforeEach(async () => {
    await page.goto(base);
    await consoleReady(page);
  });

  it('pauses a queue from its row: shown in the console, the API and the gauge; its job waits, and runs once resumed', async () => {
    await enqueue({ jobType: 'noop', delayMs: 3_600_000 });
    await open('#/queues');
    await visible('#queues tr[data-queue="default"][data-paused="false"] button[data-queue-action="pause"]');
    await page.click('#queues tr[data-queue="default"] button[data-queue-action="pause"]');
    await visible('#queues tr[data-queue="default"][data-paused="true"] [data-field="paused"]');
    expect((await db.query('SELECT queue FROM baton.paused_queues')).rows).toEqual([{ queue: 'default' }]);
    const { queues } = (await (await fetch(`${base}/api/queues`)).json()) as { queues: Array<{ queue: string; paused: boolean }> };
    expect(queues.find((q) => q.queue === 'default')?.paused).toBe(true);
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/baton_queue_paused\{queue="default"\} 1\b/);

    // A due job while paused: the daemon's worker, woken by the enqueue, leaves it pending.
    const id = await enqueue({ jobType: 'noop' });
    await open('#/jobs');
    await visible(`#jobs tr[data-job-id="${id}"][data-state="pending"]`);
    expect(await stateOf(id)).toBe('pending');

    await open('#/queues');
    await page.click('#queues tr[data-queue="default"] button[data-queue-action="resume"]');
    await visible('#queues tr[data-queue="default"][data-paused="false"]');
    await waitFor(async () => (await stateOf(id)) === 'succeeded', { message: `job ${id} to run after resume` });
    expect((await db.query('SELECT count(*)::int AS n FROM baton.paused_queues')).rows[0].n).toBe(0);
    await open('#/jobs');
    await visible(`#jobs tr[data-job-id="${id}"][data-state="succeeded"]`);
  }, 60_000);

  it('shows a delayed job as scheduled, in hours and minutes, and runs it now from its row', async () => {
    const id = await enqueue({ jobType: 'noop', payload: { late: true }, delayMs: (7 * 60 + 17) * 60_000 + 30_000 });
    await open('#/jobs');
    await visible(`#jobs tr[data-job-id="${id}"][data-scheduled="true"] [data-field="due"]`);
    expect(await page.textContent(`#jobs tr[data-job-id="${id}"] [data-field="due"]`)).toBe('in 7 h 17 min');
    expect(await page.textContent(`#jobs tr[data-job-id="${id}"] .state`)).toBe('scheduled');
    await page.click(`#jobs tr[data-job-id="${id}"] button[data-action="run-now"]`);
    await waitFor(async () => (await stateOf(id)) === 'succeeded', { message: `job ${id} to run now` });
    await visible(`#jobs tr[data-job-id="${id}"][data-state="succeeded"]`);
    expect(await page.$(`#jobs tr[data-job-id="${id}"] button[data-action="run-now"]`)).toBeNull();
  }, 60_000);

  it('replays and cancels a selection, reporting each id, conflicts included', async () => {
    // A queue no worker serves, so replayed jobs stay pending where the test can see them.
    const dead = [
      await insertFinished({ queue: 'bulk-q', jobType: 'noop', state: 'dead_lettered' }),
      await insertFinished({ queue: 'bulk-q', jobType: 'noop', state: 'dead_lettered' }),
    ];
    const running = await insertJob(db.pool, { queue: 'bulk-q', jobType: 'noop', state: 'running' });
    await open('#/jobs');
    await page.selectOption('#filter-state', '');
    await page.fill('#filter-queue', 'bulk-q');
    await page.click('#job-filters button[type="submit"]');
    for (const id of [...dead, running]) {
      await visible(`#jobs tr[data-job-id="${id}"] input.select`);
      await page.check(`#jobs tr[data-job-id="${id}"] input.select`);
    }
    expect(await page.textContent('#selected-count')).toBe('3');
    await page.click('#bulk-replay');
    await visible(`#bulk-result[data-action="replay"] li[data-job-id="${running}"][data-ok="false"]`);
    const outcomes = await page.$$eval('#bulk-result li', (lis) =>
      lis.map((li) => [li.getAttribute('data-job-id'), li.getAttribute('data-ok')]),
    );
    expect(outcomes).toEqual([
      [dead[0], 'true'],
      [dead[1], 'true'],
      [running, 'false'],
    ]);
    expect(await page.textContent(`#bulk-result li[data-job-id="${running}"]`)).toMatch(/JOB_STATE_CONFLICT \(running\)/);
    await visible('#flash[data-kind="error"]');
    expect(await page.textContent('#flash')).toMatch(/2 of 3 replayed/);
    const rows = await db.query('SELECT id::text, state, replay_count FROM baton.jobs WHERE queue = $1 ORDER BY id', ['bulk-q']);
    expect(rows.rows).toEqual([
      { id: dead[0], state: 'pending', replay_count: 1 },
      { id: dead[1], state: 'pending', replay_count: 1 },
      { id: running, state: 'running', replay_count: 0 },
    ]);
    // Done ids leave the selection; the refused one stays ticked.
    expect(await page.textContent('#selected-count')).toBe('1');

    await page.click('#bulk-clear');
    await visible(`#jobs tr[data-job-id="${dead[0]}"][data-state="pending"]`);
    await page.check('#select-page');
    expect(await page.textContent('#selected-count')).toBe('3');
    await page.click('#bulk-cancel');
    // The running job is asked to stop: done, still running, its request recorded.
    await visible(`#bulk-result[data-action="cancel"] li[data-job-id="${running}"][data-ok="true"]`);
    expect(await page.$$eval('#bulk-result li[data-ok="true"]', (lis) => lis.length)).toBe(3);
    expect(await page.textContent(`#bulk-result li[data-job-id="${running}"]`)).toMatch(/asked to stop \(running\)/);
    expect(await Promise.all([...dead, running].map(stateOf))).toEqual(['cancelled', 'cancelled', 'running']);
    const requested = await db.query('SELECT cancel_requested_at FROM baton.jobs WHERE id = $1', [running]);
    expect(requested.rows[0].cancel_requested_at).toBeInstanceOf(Date);
    await visible(`#jobs tr[data-job-id="${running}"] [data-field="cancel-requested"]`);

    // A running job's own button asks it to stop.
    const other = await insertJob(db.pool, { queue: 'bulk-q', jobType: 'noop', state: 'running' });
    await visible(`#jobs tr[data-job-id="${other}"] button[data-action="cancel"]`);
    expect(await page.textContent(`#jobs tr[data-job-id="${other}"] button[data-action="cancel"]`)).toBe('stop');
    await page.click(`#jobs tr[data-job-id="${other}"] button[data-action="cancel"]`);
    await visible(`#jobs tr[data-job-id="${other}"] [data-field="cancel-requested"]`);
    expect(await page.textContent('#flash')).toMatch(/asked to stop/);
    expect(await stateOf(other)).toBe('running');
    await page.click('#filter-clear');
  }, 60_000);

  it('opens a job by its link, by URL and by search: times, durations, attempts with stack traces', async () => {
    const stack = 'Error: disk full\n    at handler (/srv/jobs/report.ts:12:7)';
    const id = await insertFinished({
      queue: 'detail-q',
      jobType: 'report',
      state: 'dead_lettered',
      attempt: 2,
      maxAttempts: 2,
      createdAt: { inMs: -60_000 },
      runAt: { inMs: -60_000 },
      startedAt: { inMs: -30_000 },
      finishedAt: { inMs: -20_000 },
      errors: [
        { attempt: 1, token: '5', kind: 'transient', name: 'Error', message: 'disk full', stack, at: new Date().toISOString() },
        { attempt: 2, token: '6', kind: 'transient', name: 'Error', message: 'disk still full', stack, at: new Date().toISOString() },
      ],
    });
    await open('#/dlq');
    await page.click(`#dlq tr[data-job-id="${id}"] a[data-job-link="${id}"]`);
    await visible(`#job-detail[data-job-id="${id}"][data-state="dead_lettered"]`);
    expect(new URL(page.url()).hash).toBe(`#/jobs/${id}`);
    expect(await page.$$eval('#detail-attempts li', (lis) => lis.map((li) => li.getAttribute('data-attempt')))).toEqual(['1', '2']);
    expect(await page.textContent('#detail-attempts li[data-attempt="2"] pre[data-field="stack"]')).toContain('report.ts:12:7');
    for (const field of ['createdAt', 'runAt', 'startedAt', 'finishedAt']) {
      expect(await page.textContent(`#detail-times [data-field="${field}"]`), field).toMatch(/ago/);
    }
    expect(await page.textContent('#detail-durations [data-field="ran"]')).toMatch(/^1\d(\.\d)? s$/);
    expect(await page.textContent('#detail-durations [data-field="total"]')).toMatch(/^[45]\d(\.\d)? s$/);

    // Linkable: a fresh page at the URL shows the same job.
    const other = await browser.newPage();
    try {
      await other.goto(`${base}/#/jobs/${id}`);
      await other.waitForSelector(`#job-detail[data-job-id="${id}"] #detail-attempts li[data-attempt="2"]`, { timeout: 15_000 });
    } finally {
      await other.close();
    }

    await page.click('#detail-close');
    await page.waitForSelector('#job-detail', { state: 'hidden' });
    expect(new URL(page.url()).hash).toBe('#/jobs');

    // Search by id: a job, an unknown id, not an id.
    const pending = await enqueue({ jobType: 'noop', queue: 'nobody-serves', delayMs: 3_600_000 });
    await page.fill('#search-id', pending);
    await page.press('#search-id', 'Enter');
    await visible(`#job-detail[data-job-id="${pending}"][data-state="pending"] button[data-action="run-now"]`);
    await page.fill('#search-id', '987654321');
    await page.press('#search-id', 'Enter');
    await visible('#job-detail[data-job-id="987654321"][data-error="JOB_NOT_FOUND"]');
    await page.fill('#search-id', 'abc');
    await page.press('#search-id', 'Enter');
    await visible('#flash[data-kind="error"]');
    expect(await page.textContent('#flash')).toMatch(/not a job id/);
    await page.click('#detail-close');
  }, 60_000);

  it('sorts the listing by a column header both ways, and filters it by creation time', async () => {
    for (const jobType of ['sort-b', 'sort-c', 'sort-a']) await insertJob(db.pool, { queue: 'sort-q', jobType });
    await open('#/jobs');
    await page.fill('#filter-queue', 'sort-q');
    await page.click('#job-filters button[type="submit"]');
    const types = () => page.$$eval('#jobs tbody tr[data-job-type]', (trs) => trs.map((tr) => tr.getAttribute('data-job-type')));
    await waitFor(async () => (await types()).length === 3, { message: 'the three sort-q jobs listed' });

    await page.click('#jobs th[data-sort="jobType"]');
    await visible('#jobs th[data-sort="jobType"][aria-sort="ascending"]');
    // The sort is in the URL, with the filter: the view can be linked to as it is.
    expect(new URL(page.url()).hash).toBe('#/jobs?queue=sort-q&sort=jobType&order=asc');
    await waitFor(async () => JSON.stringify(await types()) === JSON.stringify(['sort-a', 'sort-b', 'sort-c']), { message: 'A to Z' });
    // No index serves this sort: the page says it sorted the newest matching jobs only.
    await visible('#jobs-total[data-windowed="true"]');
    expect(await page.textContent('#jobs-total')).toContain('sorted among the newest 500');
    await page.click('#jobs th[data-sort="jobType"]');
    await visible('#jobs th[data-sort="jobType"][aria-sort="descending"]');
    await waitFor(async () => JSON.stringify(await types()) === JSON.stringify(['sort-c', 'sort-b', 'sort-a']), { message: 'Z to A' });
    expect(await page.$('#jobs th[data-sort="id"][aria-sort]')).toBeNull();

    // Created after a minute from now: nothing; before it: all three.
    const later = new Date(Date.now() + 60_000);
    const local = new Date(later.getTime() - later.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
    await page.fill('#filter-created-after', local);
    await page.click('#job-filters button[type="submit"]');
    await visible('#jobs td.empty');
    await page.fill('#filter-created-after', '');
    await page.fill('#filter-created-before', local);
    await page.click('#job-filters button[type="submit"]');
    await waitFor(async () => (await types()).length === 3, { message: 'created before: all three' });
    await page.click('#filter-clear');
  }, 60_000);

  it('draws the charts from the history the daemon keeps, and they move with the work; the totals agree across panels', async () => {
    const points = async (id: string) => Number(await page.getAttribute(`#${id}`, 'data-points'));
    await waitFor(async () => (await points('chart-throughput')) >= 2, { message: 'two samples' });
    const before = await points('chart-depth');
    for (let i = 0; i < 5; i++) await enqueue({ jobType: 'noop', payload: { chart: i } });
    await waitFor(async () => Number(await page.getAttribute('#chart-throughput', 'data-max')) > 0, { message: 'throughput above zero' });
    await waitFor(async () => (await points('chart-depth')) > before, { message: 'new depth samples' });
    for (const id of ['chart-throughput', 'chart-depth', 'chart-latency', 'chart-failures']) {
      expect(await page.$(`#${id} svg polyline, #${id} svg circle`), id).not.toBeNull();
    }
    expect(Number(await page.getAttribute('#chart-latency', 'data-max'))).toBeGreaterThanOrEqual(0);

    // The dead-letter count in the navigation and the queue table's column come from one snapshot.
    await insertFinished({ queue: 'agree-q', jobType: 'x', state: 'dead_lettered' });
    await open('#/queues');
    await visible('#queues tr[data-queue="agree-q"]');
    // Read in one evaluation, so no refresh can come between the two.
    const [total, column] = (await page.evaluate(`[
      Number(document.querySelector('[data-badge="dlq"]').textContent),
      [...document.querySelectorAll('#queues td[data-state="dead_lettered"]')].reduce((a, td) => a + Number(td.textContent), 0),
    ]`)) as [number, number];
    expect(total).toBe(column);
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM baton.jobs WHERE state = 'dead_lettered'`);
    expect(total).toBe(rows[0].n);
  }, 60_000);

  it('is usable 375 px wide: no sideways scrolling of the page, every control within the screen', async () => {
    const narrow = await browser.newPage({ viewport: { width: 375, height: 800 } });
    try {
      for (const [hash, controls] of [
        ['#/', ['#search-id', '#enqueue-demo', '#chart-throughput svg', '#nav a[data-nav="dlq"]']],
        ['#/jobs', ['#filter-state', '#bulk-replay', '#page-next', '#jobs tr[data-job-id] button']],
        ['#/queues', ['#queues-section h2', '#queues tr[data-queue] button[data-queue-action]']],
      ] as const) {
        await narrow.goto(`${base}/${hash}`);
        await consoleReady(narrow);
        await narrow.waitForSelector(controls.at(-1)!);
        expect(await narrow.evaluate('document.documentElement.scrollWidth'), hash).toBeLessThanOrEqual(375);
        for (const sel of controls) {
          const box = await narrow.locator(sel).first().boundingBox();
          expect(box, `${hash} ${sel}`).not.toBeNull();
          expect(box!.x, `${hash} ${sel}`).toBeGreaterThanOrEqual(0);
          expect(box!.x + box!.width, `${hash} ${sel}`).toBeLessThanOrEqual(375);
        }
      }
    } finally {
      await narrow.close();
    }
  }, 60_000);

  it('shows the demo button only where the demo handlers run, and has a favicon', async () => {
    await visible('#enqueue-demo');
    expect(await page.getAttribute('link[rel="icon"]', 'href')).toMatch(/^data:image\/svg\+xml,/);
    await withDaemon(db, ['--queues', ''], { BATON_DEMO_HANDLERS: 'false' }, async (plain) => {
      const p = await browser.newPage();
      try {
        await p.goto(plain);
        await consoleReady(p);
        expect(await p.getAttribute('body', 'data-demo')).toBe('off');
        expect(await p.isHidden('#enqueue-demo')).toBe(true);
        await p.goto(`${plain}/#/dlq`);
        expect(await p.isVisible('#replay-all-dlq')).toBe(true);
      } finally {
        await p.close();
      }
    });
  }, 60_000);
  it('lists schedules with their next and last fire times and disabled reasons; pauses and resumes one', async () => {
    const res = await fetch(`${base}/api/cron`, {
      method: 'POST',
      headers: JSON_HEADERS,
      body: JSON.stringify({ name: 'every-second', cron: '* * * * * *', timezone: 'Europe/London', jobType: 'noop' }),
    });
    expect(res.status).toBe(201);
    const {
      schedule: { id },
    } = (await res.json()) as { schedule: { id: string } };
    await open('#/schedules');
    const row = `#schedules tr[data-schedule-id="${id}"]`;
    await visible(`${row}[data-status="enabled"] button[data-schedule-action="pause"]`);
    // It fires: the row shows the last occurrence once the ticker has enqueued one.
    await waitFor(async () => ((await page.textContent(`${row} [data-field="last-fired"]`)) ?? '').match(/ ago$| now$/) !== null, {
      timeoutMs: 15_000,
      message: 'a last fired time in the schedules view',
    });
    expect(await page.textContent(`${row} [data-field="next-fire"]`)).toMatch(/\d/);

    await page.click(`${row} button[data-schedule-action="pause"]`);
    await visible(`${row}[data-status="paused"] button[data-schedule-action="resume"]`);
    expect((await db.query('SELECT enabled, disabled_reason FROM baton.schedules WHERE id = $1', [id])).rows).toEqual([
      { enabled: false, disabled_reason: null },
    ]);
    await page.click(`${row} button[data-schedule-action="resume"]`);
    await visible(`${row}[data-status="enabled"]`);
    expect((await db.query('SELECT enabled FROM baton.schedules WHERE id = $1', [id])).rows).toEqual([{ enabled: true }]);

    // A schedule the scheduler disabled shows why, and offers no button (an edit re-enables it).
    await db.query(`UPDATE baton.schedules SET enabled = false, disabled_reason = 'unknown time zone Mars/Olympus' WHERE id = $1`, [id]);
    await visible(`${row}[data-status="disabled"] [data-field="disabled-reason"]`);
    expect(await page.textContent(`${row} [data-field="disabled-reason"]`)).toBe('unknown time zone Mars/Olympus');
    expect(await page.$(`${row} button[data-schedule-action]`)).toBeNull();
    expect(await page.textContent('#schedules-total')).toContain('1 disabled');
  });
});
