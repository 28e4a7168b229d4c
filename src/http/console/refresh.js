// The refresh loop: shows the view the URL names, then reads and draws it every 1.5 s while
// the tab is visible (and at once after a change), one refresh at a time.

import { ApiError, setStatus } from './api.js';
import { refreshHistory, renderCharts } from './charts.js';
import { refreshDetail } from './job-detail.js';
import { fillJobFilters, refreshDlq, refreshJobs, renderSelection } from './jobs.js';
import { refreshOutbox } from './outbox.js';
import { renderFlow, renderQueues, renderWorkers } from './queues.js';
import { route, TITLES } from './router.js';
import { renderSchedules } from './schedules.js';
import { foldNav, readSummary, renderOverview, summary } from './summary.js';
import { $ } from './util.js';
import { refreshRun, refreshRuns } from './workflows.js';

const REFRESH_MS = 1500;
/** The summary (nav counts, folding) is read every refresh on the views that show it, else every few. */
const SUMMARY_EVERY = 4;

let timer = null;
let inFlight = false;
let tick = 0;

/** Goes to a URL; the same one again refreshes in place. */
export function go(hash) {
  if (location.hash === hash) refreshNow();
  else location.hash = hash;
}

/** Shows the route's view, marks it in the navigation, fills its forms from the URL. */
export function showView(r) {
  for (const el of document.querySelectorAll('.view')) el.hidden = el.dataset.view !== r.view;
  const navView = r.view === 'job' ? 'jobs' : r.view === 'run' ? 'runs' : r.view;
  for (const a of document.querySelectorAll('#nav a[data-nav]')) {
    if (a.dataset.nav === navView) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.body.dataset.view = r.view;
  document.title = `${TITLES[r.view]}${r.id ? ` ${r.id}` : ''} · Baton console`;
  if (r.view === 'jobs') fillJobFilters(r.query);
  if (r.view === 'runs') {
    $('run-filter-state').value = r.query.state ?? '';
    $('run-filter-name').value = r.query.name ?? '';
  }
  if (r.view === 'outbox') {
    $('outbox-filter-state').value = r.query.state ?? 'dead_lettered';
    $('outbox-filter-destination').value = r.query.destination ?? '';
  }
  foldNav();
}

/** Reads and draws what the current view shows; the summary on the views that show it, else every few refreshes. */
async function refresh() {
  if (inFlight) return;
  inFlight = true;
  const r = route();
  try {
    const wantsSummary =
      ['overview', 'queues', 'workers', 'flow', 'schedules'].includes(r.view) || !summary.read || tick % SUMMARY_EVERY === 0;
    tick++;
    const [s] = await Promise.all([
      wantsSummary ? readSummary() : summary,
      r.view === 'overview' ? refreshHistory() : null,
      r.view === 'jobs' ? refreshJobs(r.query) : null,
      r.view === 'job' ? refreshDetail(r.id) : null,
      r.view === 'runs' ? refreshRuns(r.query) : null,
      r.view === 'run' ? refreshRun(r.id) : null,
      r.view === 'outbox' ? refreshOutbox(r.query) : null,
      r.view === 'dlq' ? refreshDlq(r.query) : null,
    ]);
    if (route().view !== r.view) return; // the user moved on meanwhile; the next refresh draws that view
    if (r.view === 'overview') {
      renderOverview();
      renderCharts();
      if (s.stats) renderQueues(s.stats, 'overview-queues', 10);
    }
    if (r.view === 'queues' && s.stats) renderQueues(s.stats);
    if (r.view === 'workers' && s.workers) renderWorkers(s.workers.workers);
    if (r.view === 'flow' && s.flow) renderFlow(s.flow);
    if (r.view === 'schedules') renderSchedules(s.cron);
    renderSelection();
    setStatus(true, `updated ${new Date().toLocaleTimeString()}`);
    document.body.dataset.refreshedAt = String(Date.now());
  } catch (err) {
    setStatus(false, err instanceof ApiError ? err.toString() : String(err));
  } finally {
    inFlight = false;
  }
}

export function schedule() {
  clearTimeout(timer);
  if (document.hidden || !$('auto-refresh').checked) return;
  timer = setTimeout(async () => {
    await refresh();
    schedule();
  }, REFRESH_MS);
}
// A refresh already running may have read before a change: wait for it, then read again.
export const refreshNow = async () => {
  while (inFlight) await new Promise((r) => setTimeout(r, 25));
  await refresh();
  schedule();
};

export function onRoute() {
  const r = route();
  // A tenant key has no overview of the fleet: its jobs are its overview.
  if (r.view === 'overview' && summary.scope === 'tenant' && summary.read) {
    location.replace('#/jobs');
    return;
  }
  showView(r);
  refreshNow().then(() => window.scrollTo(0, 0));
}

/** Stops the loop until the next refreshNow (a hidden tab reads nothing). */
export const pause = () => clearTimeout(timer);
