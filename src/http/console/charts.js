// The overview's four charts, drawn as SVG polylines from the history the daemon keeps
// (GET /api/stats/history): a reload shows the last minutes, not an empty chart.

import { api, fleetWide } from './api.js';
import { STATS_WINDOW_S } from './summary.js';
import { $, human } from './util.js';

// The chart history: the daemon's samples (GET /api/stats/history), newer ones appended.
let samples = [];
let historyInterval = 2000;
let historyWindow = STATS_WINDOW_S;

export async function refreshHistory() {
  const last = samples.at(-1);
  const h = await fleetWide(api('GET', `/api/stats/history${last ? `?since=${encodeURIComponent(last.iso)}` : ''}`));
  if (h === null) return;
  historyInterval = h.intervalMs;
  historyWindow = h.windowSeconds;
  for (const s of h.samples) {
    samples.push({
      iso: s.at,
      at: Date.parse(s.at),
      throughput: s.succeeded / h.windowSeconds,
      pending: s.pending,
      scheduled: s.scheduled,
      live: s.live,
      p50: s.p50,
      p95: s.p95,
      failures: s.deadLettered,
    });
  }
  // The daemon keeps 15 minutes; so does the page.
  const oldest = Date.now() - 15 * 60_000;
  if (samples.length && samples[0].at < oldest) samples = samples.filter((s) => s.at >= oldest);
}

const fmt = (v) => (v === null || v === undefined ? '—' : v >= 100 ? String(Math.round(v)) : String(Math.round(v * 10) / 10));

/**
 * Draws `series` (keys of a sample, with colours) as polylines; a missing value, or a gap of
 * more than three sampling intervals (nobody was reading), breaks the line.
 */
function drawChart(id, series) {
  const fig = $(id);
  const svg = fig.querySelector('svg');
  const W = 300,
    H = 70,
    pad = 4;
  const values = samples.flatMap((s) => series.map((x) => s[x.key])).filter((v) => v !== null && v !== undefined);
  const max = Math.max(1e-9, ...values);
  const t0 = samples[0]?.at ?? 0;
  const span = Math.max(1, (samples.at(-1)?.at ?? 0) - t0);
  const x = (s) => (samples.length < 2 ? W : ((s.at - t0) / span) * W);
  const y = (v) => H - pad - (v / max) * (H - 2 * pad);
  const lines = series.map(({ key, color }) => {
    const runs = [[]];
    let prev = null;
    for (const s of samples) {
      const v = s[key];
      const gap = prev !== null && s.at - prev > 3 * historyInterval;
      prev = s.at;
      if (v === null || v === undefined || gap) {
        if (runs.at(-1).length) runs.push([]);
        if (v === null || v === undefined) continue;
      }
      runs.at(-1).push(`${x(s).toFixed(1)},${y(v).toFixed(1)}`);
    }
    return runs
      .filter((r) => r.length)
      .map((r) =>
        r.length === 1
          ? `<circle cx="${r[0].split(',')[0]}" cy="${r[0].split(',')[1]}" r="2" fill="${color}"/>`
          : `<polyline fill="none" stroke="${color}" stroke-width="1.6" vector-effect="non-scaling-stroke" points="${r.join(' ')}"/>`,
      )
      .join('');
  });
  svg.innerHTML = `<line x1="0" x2="${W}" y1="${H - pad}" y2="${H - pad}" stroke="#e3e6ec"/>${lines.join('')}`;
  const last = samples.at(-1);
  fig.dataset.points = String(samples.length);
  fig.dataset.max = String(values.length ? Math.max(...values) : 0);
  fig.dataset.last = last ? series.map((s) => fmt(last[s.key])).join(' / ') : '';
  const label = fig.querySelector('[data-field="last"]');
  label.textContent = fig.dataset.last;
  label.title = `latest; the highest shown is ${fmt(values.length ? Math.max(...values) : 0)}`;
}

export function renderCharts() {
  $('charts-window').textContent =
    samples.length > 1
      ? `last ${human(samples.at(-1).at - samples[0].at)} · rates over ${historyWindow} s windows`
      : samples.length
        ? 'sampling…'
        : '';
  $('charts-section').dataset.first = samples[0]?.iso ?? '';
  drawChart('chart-throughput', [{ key: 'throughput', color: 'var(--succeeded)' }]);
  drawChart('chart-depth', [
    { key: 'pending', color: 'var(--pending)' },
    { key: 'scheduled', color: 'var(--scheduled)' },
    { key: 'live', color: 'var(--running)' },
  ]);
  drawChart('chart-latency', [
    { key: 'p50', color: 'var(--accent)' },
    { key: 'p95', color: 'var(--leased)' },
  ]);
  drawChart('chart-failures', [{ key: 'failures', color: 'var(--dead_lettered)' }]);
}
