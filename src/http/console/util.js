// Helpers every view uses: escaping, times as people say them, state badges and links,
// query strings, and filling a table's body (labelled cells for narrow screens).

export const STATES = ['pending', 'waiting', 'leased', 'running', 'succeeded', 'dead_lettered', 'cancelled'];

export const $ = (id) => document.getElementById(id);

export const esc = (v) =>
  String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

/** A span in the largest two units that matter: "42 s", "5 min 3 s", "7 h 17 min", "3 d 4 h". */
export function human(ms) {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return m < 10 && s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}
/** "in 7 h 17 min" or "3 min ago" from now; "now" within a second. */
export const ago = (iso) => {
  if (!iso) return '';
  const ms = Date.parse(iso) - Date.now();
  if (Math.abs(ms) < 1000) return 'now';
  return ms > 0 ? `in ${human(ms)}` : `${human(ms)} ago`;
};
/** The time between two instants, precise below a minute (a job's run, a step's). */
export const duration = (fromIso, toIso) => {
  if (!fromIso || !toIso) return null;
  const ms = Math.max(0, Date.parse(toIso) - Date.parse(fromIso));
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return human(ms);
};
// A time with its distance from now ("in 42 s", "3 min ago"), the local time in the tooltip.
export const when = (iso) =>
  iso ? `<span title="${esc(new Date(iso).toLocaleString())} (${esc(iso)})">${esc(ago(iso))}</span>` : '<span class="mute">—</span>';
export const whenLong = (iso) =>
  iso
    ? `<span title="${esc(iso)}">${esc(new Date(iso).toLocaleString())}</span> <span class="mute">${esc(ago(iso))}</span>`
    : '<span class="mute">—</span>';

export const isScheduled = (job) => job.state === 'pending' && Date.parse(job.runAt) > Date.now();
/** A job's state as people read it: a pending job whose run-at lies ahead is scheduled. */
export const stateBadge = (s, scheduled = false) =>
  scheduled
    ? `<span class="state scheduled" data-state="${esc(s)}" title="pending, not due yet">scheduled</span>`
    : `<span class="state ${esc(s)}" data-state="${esc(s)}">${esc(s)}</span>`;
export const jobLink = (id) => `<a class="mono" href="#/jobs/${esc(id)}" data-job-link="${esc(id)}">${esc(id)}</a>`;

export const qs = (o) => new URLSearchParams(Object.entries(o).filter(([, v]) => v !== undefined && v !== null && v !== '')).toString();

/** Labels each cell with its column's heading, for the one-card-per-row layout of narrow screens. */
function labelCells(table) {
  const heads = [...table.tHead.rows[0].cells].map((th) => th.textContent.trim());
  for (const tr of table.tBodies[0].rows) {
    if (tr.cells.length !== heads.length) continue;
    [...tr.cells].forEach((td, i) => {
      td.dataset.label = heads[i];
    });
  }
}
export function setRows(tableId, rows, emptyHtml) {
  const table = $(tableId);
  const cols = table.tHead.rows[0].cells.length;
  table.tBodies[0].innerHTML = rows.length ? rows.join('') : `<tr><td colspan="${cols}" class="empty">${emptyHtml}</td></tr>`;
  labelCells(table);
  sizeBars(table);
}

/** Sets the width of every progress bar under `root` from its data-pct (no inline styles: the CSP refuses them). */
export function sizeBars(root) {
  for (const bar of root.querySelectorAll('.bar > span[data-pct]')) bar.style.width = `${bar.dataset.pct}%`;
}

/**
 * A job's progress (ctx.progress): a number 0..100 as a bar and a percentage; an object as its
 * JSON (cut to `max` characters, whole in the title), with a bar when it has a numeric `percent`.
 * Empty for null or absent.
 */
export function progressHtml(p, max = 60) {
  if (p === null || p === undefined) return '';
  const pct = typeof p === 'number' ? p : typeof p.percent === 'number' && p.percent >= 0 && p.percent <= 100 ? p.percent : null;
  const bar = pct === null ? '' : `<div class="bar" title="${esc(pct)}%"><span data-pct="${esc(pct)}"></span></div>`;
  if (typeof p === 'number')
    return `<span class="progress" data-field="progress">${bar}<span class="num">${esc(Math.round(p * 10) / 10)}%</span></span>`;
  const text = JSON.stringify(p);
  const shown = text.length > max ? `${text.slice(0, max - 1)}…` : text;
  return `<span class="progress" data-field="progress" title="${esc(text)}">${bar}<code>${esc(shown)}</code></span>`;
}
/** A span of ms as the console writes windows: 1500 -> "1.5 s", 90000 -> "1.5 min", 7200000 -> "2 h". */
function spanMs(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${Math.round(ms / 100) / 10} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 6_000) / 10} min`;
  return `${Math.round(ms / 360_000) / 10} h`;
}

/**
 * The debounce or throttle rule a job's key holds it under (job.enqueueWindow): its key, and its
 * window in words. Empty when the job has none.
 */
export function windowHtml(w) {
  if (!w) return '';
  const rule =
    w.kind === 'debounce'
      ? `${esc(w.mode)}, window ${esc(spanMs(w.windowMs))}${w.maxWaitMs != null ? `, max wait ${esc(spanMs(w.maxWaitMs))}` : ''}`
      : `${esc(w.limit)} per ${esc(spanMs(w.windowMs))}`;
  return `<span data-field="enqueueWindow">key <code class="mono">${esc(w.key)}</code> · ${rule}</span>`;
}

/** A paging link: its URL, or disabled. */
export function pageLink(id, target) {
  const a = $(id);
  if (target === null) {
    a.setAttribute('aria-disabled', 'true');
    a.removeAttribute('href');
  } else {
    a.removeAttribute('aria-disabled');
    a.setAttribute('href', target);
  }
}
