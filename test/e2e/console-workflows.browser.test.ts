// The console's workflow views in headless Chromium (playwright-core, system /usr/bin/chromium)
// against the real daemon with its demo handlers: the demo button starts place-order runs, the
// runs list (linkable with its filter) shows them waiting for their event, a run's timeline
// (#/runs/<id>) shows each step and what the run waits for, sending the event from the console
// finishes the run, a wait that timed out is shown as timed out, and a blocked run shows its
// reason with resume and cancel. Assertions read the
// database and the DOM; every wait is a Playwright wait or a polled condition.

import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.ts';
import { consoleReady, hasChromium, useConsole, warnIfNoChromium } from './console-browser.ts';

warnIfNoChromium('console-workflows.browser.test.ts');

describe.skipIf(!hasChromium)('console workflow views (headless Chromium)', () => {
  const con = useConsole({ viewport: { width: 1400, height: 1000 } });
  const { db } = con;
  let page: Page;
  let base: string;
  beforeAll(() => {
    ({ page, base } = con);
  });

  it('starts demo orders, shows them waiting for shipped with a timeout, a run timeline, and finishes one from its button', async () => {
    await page.goto(base);
    await consoleReady(page);
    await page.click('#start-demo-orders');
    await page.waitForSelector('#flash[data-kind="ok"]');
    // The runs view is linkable with its filter: only the waiting ones.
    await page.goto(`${base}/#/runs?state=waiting`);
    expect(await page.inputValue('#run-filter-state')).toBe('waiting');
    await waitFor(async () => (await page.$$('#runs tr[data-name="place-order"][data-state="waiting"]')).length === 3, {
      timeoutMs: 20_000,
      message: 'three demo runs waiting in the list',
    });
    const runs = await db.query(`SELECT id::text, state, wait_event FROM baton.workflow_runs ORDER BY id`);
    expect(runs.rows.map((r) => [r.state, r.wait_event])).toEqual([
      ['waiting', 'shipped'],
      ['waiting', 'shipped'],
      ['waiting', 'shipped'],
    ]);
    const id = runs.rows[0].id as string;
    const row = `#runs tr[data-run-id="${id}"]`;
    // In people's words: "times out in 59 s", not a count of seconds.
    expect(await page.textContent(`${row} [data-field="waiting-for"]`)).toMatch(/event shipped · times out in (\d+ s|1 min)$/);

    // The timeline: the two steps done, the wait for shipped with its timeout.
    await page.click(`${row} a`);
    await page.waitForSelector(`#run-timeline[data-run-id="${id}"][data-state="waiting"]`);
    expect(new URL(page.url()).hash).toBe(`#/runs/${id}`);
    const steps = await page.$$eval('#timeline-steps li[data-step-key]', (lis) =>
      lis.map((li) => [li.getAttribute('data-step-key'), li.getAttribute('data-kind'), li.getAttribute('data-status')]),
    );
    expect(steps).toEqual([
      ['reserve-stock', 'step', 'succeeded'],
      ['charge-card', 'step', 'succeeded'],
      ['shipped', 'event', 'waiting'],
    ]);
    expect(await page.textContent('#timeline-steps li[data-step-key="shipped"]')).toMatch(/waits for event shipped until/);

    // Send the event from the run's button: the run resumes and finishes; its timeline says so.
    await page.click('#timeline-actions button[data-run-action="event"]');
    await page.waitForSelector(`#run-timeline[data-run-id="${id}"][data-state="succeeded"]`, { timeout: 20_000 });
    await page.waitForSelector('#timeline-steps li[data-step-key="notify"][data-status="succeeded"]');
    expect(await page.getAttribute('#timeline-steps li[data-step-key="shipped"]', 'data-status')).toBe('succeeded');
    const done = await db.query('SELECT state, output FROM baton.workflow_runs WHERE id = $1', [id]);
    expect(done.rows[0].state).toBe('succeeded');
    expect(done.rows[0].output.shipped).toEqual({ from: 'console' });

    // Cancel another from its button: cancelled in the list and in the database.
    const other = runs.rows[1].id as string;
    await page.goto(`${base}/#/runs`);
    await page.click(`#runs tr[data-run-id="${other}"] button[data-run-action="cancel"]`);
    await page.waitForSelector(`#runs tr[data-run-id="${other}"][data-state="cancelled"]`, { timeout: 15_000 });
    expect((await db.query('SELECT state FROM baton.workflow_runs WHERE id = $1', [other])).rows[0].state).toBe('cancelled');
  }, 120_000);

  it('shows a wait whose event never came as timed out, not as succeeded', async () => {
    const res = await fetch(`${base}/api/workflows/place-order/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: { sku: 'late', amount: 1, shipWithinMs: 300 } }),
    });
    expect(res.status).toBe(201);
    const { run } = (await res.json()) as { run: { id: string } };
    await waitFor(
      async () => (await db.query('SELECT state FROM baton.workflow_runs WHERE id = $1', [run.id])).rows[0]?.state === 'succeeded',
      { timeoutMs: 20_000, message: 'the run to finish after its wait timed out' },
    );
    await page.goto(`${base}/#/runs/${run.id}`);
    const shipped = `#run-timeline[data-run-id="${run.id}"] #timeline-steps li[data-step-key="shipped"]`;
    await page.waitForSelector(`${shipped}[data-timed-out="true"]`, { timeout: 15_000 });
    expect(await page.textContent(`${shipped} .step-status`)).toBe('timed out');
    // A delivered event stays succeeded (the first test's run).
    expect(await page.$(`#timeline-steps li[data-timed-out="true"]:not([data-step-key="shipped"])`)).toBeNull();
  }, 60_000);

  it('shows a blocked run with its reason, offers resume and cancel, and cancels it from its button', async () => {
    const res = await fetch(`${base}/api/workflows/place-order/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: { sku: 'blocked', amount: 1, shipWithinMs: 600_000 } }),
    });
    const { run } = (await res.json()) as { run: { id: string } };
    await waitFor(
      async () => (await db.query('SELECT state FROM baton.workflow_runs WHERE id = $1', [run.id])).rows[0]?.state === 'waiting',
      { timeoutMs: 20_000, message: 'the run to wait for shipped' },
    );
    // As an execution that found its history unreplayable leaves it (the block itself is the engine's, tested there).
    const reason = { code: 'NON_DETERMINISM', message: 'workflow "place-order" is not deterministic', steps: ['charge', 'charge-card'] };
    await db.query(`UPDATE baton.workflow_runs SET state = 'blocked', blocked_reason = $2::jsonb WHERE id = $1`, [run.id, reason]);
    await page.goto(`${base}/#/runs?state=blocked`);
    const row = `#runs tr[data-run-id="${run.id}"][data-state="blocked"]`;
    await page.waitForSelector(row, { timeout: 15_000 });
    expect(await page.textContent(`${row} [data-field="blocked-reason"]`)).toBe('NON_DETERMINISM: charge, charge-card');
    expect(await page.getAttribute(`${row} [data-field="blocked-reason"]`, 'title')).toBe(reason.message);
    expect(await page.textContent(`${row} button[data-run-action="replay"]`)).toBe('resume');
    await page.click(`${row} button[data-run-action="cancel"]`);
    await waitFor(
      async () => (await db.query('SELECT state FROM baton.workflow_runs WHERE id = $1', [run.id])).rows[0]?.state === 'cancelled',
      { timeoutMs: 15_000, message: 'the blocked run to be cancelled' },
    );
    // The list filtered on blocked no longer shows it.
    await page.waitForSelector(`#runs tr[data-run-id="${run.id}"]`, { state: 'detached', timeout: 15_000 });
  }, 60_000);
});
