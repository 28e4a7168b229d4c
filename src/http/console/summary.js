// The summary every refresh or every few reads: stats, workers, which features are in use.
// It feeds the navigation (badges, folding into "More") and the overview's tiles.

import { api, fleetWide } from './api.js';
import { $, STATES } from './util.js';

export const STATS_WINDOW_S = 10;

/** Views that read fleet-wide state: a tenant key cannot see them. */
const FLEET_VIEWS = new Set(['queues', 'flow', 'workers']);

/** What the last summary found: scope, which features are in use, counts. */
export const summary = { scope: 'admin', features: { runs: false, schedules: false, outbox: false, flow: false }, read: false };

/**
 * Features with nothing in them (no runs, schedules, outbox messages or limits) fold into
 * "More", and their overview tiles hide; fleet-wide views leave the navigation for a tenant key.
 */
export function foldNav() {
  const current = document.body.dataset.view === 'run' ? 'runs' : document.body.dataset.view;
  const more = $('nav-more-items');
  let folded = 0;
  for (const a of document.querySelectorAll('#nav a[data-nav]')) {
    a.hidden = a.hasAttribute('data-fleet') && summary.scope === 'tenant';
    const feature = a.dataset.feature;
    const fold = feature !== undefined && summary.read && !summary.features[feature] && a.dataset.nav !== current;
    if (fold && a.parentElement !== more) more.append(a);
    else if (!fold && a.parentElement === more) $('nav-more').before(a);
    if (fold && !a.hidden) folded++;
  }
  // Keep the navigation's own order when links come back from "More".
  const order = [...document.querySelectorAll('#nav > a[data-nav]')].sort((x, y) => navIndex(x) - navIndex(y));
  for (const a of order) $('nav-more').before(a);
  $('nav-more').hidden = folded === 0;
  if (folded === 0) $('nav-more').open = false;
}
const NAV_ORDER = ['overview', 'jobs', 'queues', 'runs', 'schedules', 'outbox', 'flow', 'dlq', 'workers'];
const navIndex = (a) => NAV_ORDER.indexOf(a.dataset.nav);

export async function readSummary() {
  const [stats, w, cron, outbox, flow, runs, waitingRuns] = await Promise.all([
    fleetWide(api('GET', `/api/stats?windowSeconds=${STATS_WINDOW_S}`)),
    fleetWide(api('GET', '/api/workers')),
    api('GET', '/api/cron?limit=100'),
    api('GET', '/api/outbox/stats'),
    fleetWide(api('GET', '/api/flow')),
    api('GET', '/api/workflows/runs?limit=1'),
    api('GET', '/api/workflows/runs?state=waiting&limit=100'),
  ]);
  summary.read = true;
  summary.scope = stats !== null && w !== null ? 'admin' : 'tenant';
  summary.features = {
    runs: runs.runs.length > 0,
    schedules: cron.schedules.length > 0,
    outbox: outbox.destinations.length > 0,
    flow: flow !== null && (flow.queues.length > 0 || flow.keys.length > 0 || flow.weights.length > 0),
  };
  Object.assign(summary, { stats, workers: w, cron, outbox, flow, waitingRuns });
  document.body.dataset.scope = summary.scope;
  $('scope-note').hidden = summary.scope === 'admin';
  // Fleet-wide panels are an admin's: a tenant key's page leaves them out.
  $('charts-section').hidden = summary.scope !== 'admin';
  $('overview-queues-section').hidden = summary.scope !== 'admin';
  for (const v of FLEET_VIEWS) document.querySelector(`.view[data-view="${v}"] section`).hidden = summary.scope !== 'admin';
  const totals = stats ? countTotals(stats) : null;
  summary.totals = totals;
  badge('dlq', totals ? totals.dead_lettered : null);
  badge('workers', w ? w.workers.filter((x) => x.alive).length : null);
  badge('runs', waitingRuns.runs.length ? `${waitingRuns.runs.length}${waitingRuns.runs.length === 100 ? '+' : ''}` : '');
  const disabled = cron.schedules.filter((s) => s.status === 'disabled').length;
  badge('schedules', disabled ? `${disabled} off` : '');
  badge('outbox', outbox.totals.dead_lettered ? String(outbox.totals.dead_lettered) : '', outbox.totals.dead_lettered > 0);
  foldNav();
  return summary;
}
function badge(name, value, alert) {
  const el = document.querySelector(`[data-badge="${name}"]`);
  el.textContent = value === null || value === undefined || value === 0 ? '' : String(value);
  if (alert !== undefined) el.classList.toggle('alert', alert);
}

export function countTotals(stats) {
  const totals = Object.fromEntries(STATES.map((s) => [s, 0]));
  totals.scheduled = 0;
  for (const q of stats.queues) {
    STATES.forEach((s) => {
      totals[s] += q.counts[s] || 0;
    });
    totals.scheduled += q.scheduled || 0;
  }
  return totals;
}

export function renderOverview() {
  const t = summary.totals;
  const tile = (name, value, show = true) => {
    const a = document.querySelector(`#tiles [data-tile="${name}"]`);
    a.hidden = !show;
    a.querySelector('b').textContent = value === null || value === undefined ? '—' : String(value);
    a.dataset.value = String(value ?? '');
  };
  const fleet = t !== null;
  tile('pending', fleet ? t.pending - t.scheduled : null, fleet);
  tile('scheduled', fleet ? t.scheduled : null, fleet);
  tile('live', fleet ? t.leased + t.running : null, fleet);
  tile('waiting', fleet ? t.waiting : null, fleet && t.waiting > 0);
  tile('succeeded', fleet ? t.succeeded : null, fleet);
  tile('dlq', fleet ? t.dead_lettered : null, fleet);
  document.querySelector('#tiles [data-tile="dlq"]').classList.toggle('alert', fleet && t.dead_lettered > 0);
  tile('workers', summary.workers ? summary.workers.workers.filter((w) => w.alive).length : null, summary.workers !== null);
  const waiting = summary.waitingRuns.runs.length;
  tile('runs', `${waiting}${waiting === 100 ? '+' : ''}`, summary.features.runs);
  const cron = summary.cron.schedules;
  const off = cron.filter((s) => s.status !== 'enabled').length;
  tile('schedules', `${cron.length}${off ? ` (${off} off)` : ''}`, summary.features.schedules);
  tile('outbox', summary.outbox.totals.pending, summary.features.outbox);
  const held = summary.flow ? summary.flow.held.reduce((n, h) => n + h.jobs, 0) : 0;
  tile('flow', held, summary.features.flow);
}
