// The job listings: #/jobs (filters and sort in the URL, selection, paging) and #/dlq, with
// each row's details loaded when opened, and the buttons a job's state allows.

import { ApiError, api } from './api.js';
import { href } from './router.js';
import { $, ago, esc, isScheduled, jobLink, pageLink, progressHtml, qs, setRows, stateBadge, when } from './util.js';

const DLQ_PAGE = 20;

export const open = new Set(); // <details> keys kept open across re-renders
export const selected = new Set(); // job ids ticked in the listing, kept across refreshes and pages

// Listings carry bounded summaries; a row's payload, result and failure history come from
// GET /api/jobs/:id when its details are opened (cached until the job changes).
const fullJobs = new Map();
function fullJob(id, updatedAt) {
  const key = `${id}@${updatedAt}`;
  if (!fullJobs.has(key)) {
    if (fullJobs.size > 200) fullJobs.clear();
    fullJobs.set(
      key,
      api('GET', `/api/jobs/${encodeURIComponent(id)}`).catch((err) => {
        fullJobs.delete(key);
        throw err;
      }),
    );
  }
  return fullJobs.get(key);
}

export const chainItems = (errors) =>
  errors
    .map(
      (e) => `<li data-attempt="${esc(e.attempt)}" data-kind="${esc(e.kind)}">attempt ${esc(e.attempt)}
    · <b>${esc(e.kind)}</b> · ${esc(e.name)}: ${esc(e.message)} <span class="mute">${esc(ago(e.at))} · token ${esc(e.token)}</span>
    ${e.stack ? `<pre data-field="stack">${esc(e.stack)}</pre>` : ''}</li>`,
    )
    .join('');

const fillers = {
  chain: (job) => `<ol class="chain">${chainItems(job.errors || [])}</ol>`,
  payload: (job) =>
    `<pre>${esc(JSON.stringify(job.payload))}</pre>${job.state === 'succeeded' ? `<pre>${esc(JSON.stringify(job.result))}</pre>` : ''}`,
};

/** Fills an open <details data-fill> with its job's full record. */
export async function fill(d) {
  const target = d.querySelector('[data-body]');
  if (!target || target.dataset.filled === d.dataset.updatedAt) return;
  try {
    const job = await fullJob(d.dataset.jobId, d.dataset.updatedAt);
    target.innerHTML = fillers[d.dataset.fill](job);
    target.dataset.filled = d.dataset.updatedAt;
  } catch (err) {
    target.textContent = `could not load the job: ${err instanceof ApiError ? err.toString() : String(err)}`;
  }
}
const fillOpen = (root) => root.querySelectorAll('details[open][data-fill]').forEach((d) => void fill(d));

function lazyDetails(key, job, kind, summaryHtml, extra = '') {
  return `<details data-key="${esc(key)}" data-fill="${kind}" data-job-id="${esc(job.id)}" data-updated-at="${esc(job.updatedAt)}"${open.has(key) ? ' open' : ''}>
    <summary>${summaryHtml}</summary>${extra}<div data-body><span class="mute">loading…</span></div></details>`;
}

function chain(job, where) {
  if (!job.errorCount) return where === 'dlq' ? '<span class="mute">—</span>' : '';
  const e = job.lastError;
  const last = e ? `<div class="mute" data-field="last-error">last: <b>${esc(e.kind)}</b> · ${esc(e.name)}: ${esc(e.message)}</div>` : '';
  return lazyDetails(`${where}:${job.id}`, job, 'chain', `${esc(job.errorCount)} failure(s)`, last);
}

export function actions(job) {
  const b = [];
  if (['succeeded', 'dead_lettered', 'cancelled'].includes(job.state))
    b.push(`<button type="button" data-action="replay" data-job-id="${esc(job.id)}">replay</button>`);
  if (isScheduled(job))
    b.push(`<button type="button" data-action="run-now" data-job-id="${esc(job.id)}" title="make it due now">run now</button>`);
  if (job.state === 'pending' || job.state === 'waiting')
    b.push(`<button type="button" data-action="cancel" data-job-id="${esc(job.id)}">cancel</button>`);
  // A running job is asked to stop (its handler's signal aborts); asked once is enough.
  if ((job.state === 'leased' || job.state === 'running') && !job.cancelRequestedAt) {
    b.push(
      `<button type="button" data-action="cancel" data-job-id="${esc(job.id)}" title="abort its handler's signal; it ends cancelled if it stops, succeeded if it finishes anyway">stop</button>`,
    );
  }
  if (job.cancelRequestedAt)
    b.push(
      `<span class="mute" data-field="cancel-requested" title="${esc(job.cancelRequestedAt)}">cancel requested ${esc(ago(job.cancelRequestedAt))}</span>`,
    );
  return b.join(' ');
}

function jobAttrs(job) {
  return `data-job-id="${esc(job.id)}" data-state="${esc(job.state)}" data-job-type="${esc(job.jobType)}" data-attempt="${esc(job.attempt)}" data-max-attempts="${esc(job.maxAttempts)}" data-replay-count="${esc(job.replayCount)}" data-scheduled="${isScheduled(job)}"`;
}

export async function refreshDlq(q) {
  const offset = Math.max(0, Number(q.offset) || 0);
  const page = await api('GET', `/api/jobs?${qs({ state: 'dead_lettered', limit: DLQ_PAGE, offset })}`);
  const rows = page.jobs.map(
    (j) => `<tr ${jobAttrs(j)}><td>${jobLink(j.id)}</td><td>${esc(j.jobType)}</td><td>${esc(j.queue)}</td>
    <td class="num" data-field="attempt">${esc(j.attempt)} / ${esc(j.maxAttempts)}</td>
    <td class="num" data-field="replayCount">${esc(j.replayCount)}</td>
    <td>${esc(j.reason)}</td><td>${chain(j, 'dlq')}</td><td class="mute">${when(j.finishedAt)}</td><td>${actions(j)}</td></tr>`,
  );
  setRows('dlq', rows, 'The dead-letter queue is empty.');
  fillOpen($('dlq'));
  $('dlq-total').textContent = String(page.total);
  $('dlq-total').dataset.count = String(page.total);
  $('dlq-page').textContent = page.total ? `${page.offset + 1}–${page.offset + page.jobs.length} of ${page.total}` : '';
  pageLink('dlq-prev', page.offset === 0 ? null : href('dlq', { offset: Math.max(0, page.offset - DLQ_PAGE) || undefined }));
  pageLink('dlq-next', page.offset + page.jobs.length >= page.total ? null : href('dlq', { offset: page.offset + DLQ_PAGE }));
}

// The jobs view's filters live in the URL; "pending" means due, "scheduled" pending with its run-at ahead.
/** JOB_SORT_WINDOW: how many of the newest matching jobs a windowed listing sorts. */
const SORT_WINDOW = 500;
const JOB_QUERY_KEYS = ['state', 'queue', 'jobType', 'tenantId', 'createdAfter', 'createdBefore', 'sort', 'order', 'limit', 'offset'];
export const jobQuery = (q) => Object.fromEntries(JOB_QUERY_KEYS.filter((k) => q[k] !== undefined && q[k] !== '').map((k) => [k, q[k]]));
function apiJobQuery(q) {
  const { state, sort, order, limit, offset, ...rest } = jobQuery(q);
  const due = state === 'scheduled' ? 'false' : state === 'pending' ? 'true' : undefined;
  const apiState = state === 'scheduled' ? 'pending' : state;
  const sorted = !sort || (sort === 'id' && (order ?? 'desc') === 'desc') ? {} : { sort, order: order ?? 'desc' };
  return qs({ ...rest, state: apiState, due, ...sorted, limit: limit ?? 50, offset });
}
const toLocalInput = (iso) => {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
};
export function fillJobFilters(q) {
  $('filter-state').value = q.state ?? '';
  $('filter-queue').value = q.queue ?? '';
  $('filter-job-type').value = q.jobType ?? '';
  $('filter-tenant').value = q.tenantId ?? '';
  $('filter-created-after').value = toLocalInput(q.createdAfter);
  $('filter-created-before').value = toLocalInput(q.createdBefore);
  $('page-size').value = String(q.limit ?? 50);
}

export async function refreshJobs(q) {
  const page = await api('GET', `/api/jobs?${apiJobQuery(q)}`);
  const sort = q.sort ?? 'id';
  const order = q.order ?? 'desc';
  const rows = page.jobs.map((j) => {
    const scheduled = isScheduled(j);
    const runs = scheduled
      ? `<span data-field="due" title="${esc(j.runAt)}">${esc(ago(j.runAt))}</span>`
      : j.state === 'pending'
        ? '<span class="mute">due</span>'
        : (j.state === 'leased' || j.state === 'running') && j.progress != null
          ? progressHtml(j.progress, 24)
          : '<span class="mute">—</span>';
    const detail = lazyDetails(`job:${j.id}`, j, 'payload', `payload${j.state === 'succeeded' ? ' / result' : ''}`) + chain(j, 'jobs');
    return `<tr ${jobAttrs(j)}><td><input type="checkbox" class="select" data-job-id="${esc(j.id)}" aria-label="select job ${esc(j.id)}"${selected.has(j.id) ? ' checked' : ''}></td>
      <td>${jobLink(j.id)}</td><td>${stateBadge(j.state, scheduled)}</td><td>${esc(j.jobType)}</td>
      <td>${esc(j.queue)}</td><td class="hide-narrow">${esc(j.tenantId)}</td>
      <td class="num" data-field="attempt">${esc(j.attempt)} / ${esc(j.maxAttempts)}</td>
      <td class="num hide-narrow" data-field="replayCount">${esc(j.replayCount)}</td>
      <td>${runs}</td>
      <td class="mute">${when(j.updatedAt)}</td><td>${detail}</td><td>${actions(j)}</td></tr>`;
  });
  setRows('jobs', rows, 'No jobs match.');
  fillOpen($('jobs'));
  const label = { pending: 'pending and due', scheduled: 'scheduled' }[q.state] ?? q.state;
  // A sort other than id/createdAt sorts only the newest SORT_WINDOW matching jobs (the API says windowed).
  const windowNote = page.windowed ? ` · sorted among the newest ${SORT_WINDOW}` : '';
  $('jobs-total').textContent = `${page.total}${page.total === 1000 ? '+' : ''} matching${label ? ` · ${label}` : ''}${windowNote}`;
  $('jobs-total').dataset.windowed = String(page.windowed);
  const reachable = page.windowed ? Math.min(page.total, SORT_WINDOW) : page.total;
  $('page-info').textContent = page.total ? `${page.offset + 1}–${page.offset + page.jobs.length} of ${reachable}` : '';
  const base = jobQuery(q);
  pageLink('page-prev', page.offset === 0 ? null : href('jobs', { ...base, offset: Math.max(0, page.offset - page.limit) || undefined }));
  pageLink('page-next', page.offset + page.jobs.length >= reachable ? null : href('jobs', { ...base, offset: page.offset + page.limit }));
  const boxes = [...document.querySelectorAll('#jobs input.select')];
  $('select-page').checked = boxes.length > 0 && boxes.every((b) => b.checked);
  for (const th of document.querySelectorAll('#jobs th[data-sort]')) {
    if (th.dataset.sort === sort) th.setAttribute('aria-sort', order === 'asc' ? 'ascending' : 'descending');
    else th.removeAttribute('aria-sort');
  }
}

export function renderSelection() {
  $('selected-count').textContent = String(selected.size);
  for (const id of ['bulk-replay', 'bulk-cancel', 'bulk-run-now', 'bulk-clear']) $(id).disabled = selected.size === 0;
}
