// The listing's selection and bulk actions, the filter forms (their values become the URL),
// search by id, the API key box, and the <details> that stay open across re-renders.

import { act } from './actions.js';
import { ApiError, api, flash, useKey } from './api.js';
import { fill, jobQuery, open, renderSelection, selected } from './jobs.js';
import { go, refreshNow } from './refresh.js';
import { href, route } from './router.js';
import { summary } from './summary.js';
import { $, esc, jobLink } from './util.js';

const BULK_LABEL = { replay: 'replayed', cancel: 'cancelled', runNow: 'due now' };
// Filters: the form's values become the URL, so every filtered view can be linked to.
const dateParam = (id) => {
  const v = $(id).value;
  return v ? new Date(v).toISOString() : '';
};

export function wireForms() {
  // Selection and bulk actions.
  document.addEventListener('change', (ev) => {
    const box = ev.target;
    if (box.matches?.('#jobs input.select')) {
      if (box.checked) selected.add(box.dataset.jobId);
      else selected.delete(box.dataset.jobId);
      renderSelection();
    } else if (box.id === 'select-page') {
      for (const b of document.querySelectorAll('#jobs input.select')) {
        b.checked = box.checked;
        if (box.checked) selected.add(b.dataset.jobId);
        else selected.delete(b.dataset.jobId);
      }
      renderSelection();
    }
  });
  $('bulk-clear').addEventListener('click', () => {
    selected.clear();
    document.querySelectorAll('#jobs input.select').forEach((b) => {
      b.checked = false;
    });
    renderSelection();
  });

  for (const b of document.querySelectorAll('button[data-bulk]')) {
    b.addEventListener('click', () =>
      act(`${b.textContent}`, async () => {
        const action = b.dataset.bulk;
        const ids = [...selected];
        // The server takes 100 ids per call; a larger selection goes in several calls, each reported.
        const results = [];
        for (let i = 0; i < ids.length; i += 100)
          results.push(...(await api('POST', '/api/jobs/bulk', { action, ids: ids.slice(i, i + 100) })).results);
        const refused = results.filter((r) => !r.ok);
        for (const r of results) if (r.ok) selected.delete(r.id);
        renderSelection();
        $('bulk-result').innerHTML = results
          .map(
            (r) =>
              `<li data-job-id="${esc(r.id)}" data-ok="${r.ok}">${jobLink(r.id)}: ${
                r.ok
                  ? action === 'cancel' && r.state !== 'cancelled'
                    ? `asked to stop (${esc(r.state)})`
                    : `${BULK_LABEL[action]} (${esc(r.state)})`
                  : `${esc(r.error.code)}${r.state ? ` (${esc(r.state)})` : ''}: ${esc(r.error.message)}`
              }</li>`,
          )
          .join('');
        $('bulk-result').dataset.action = action;
        const summaryText = `${results.length - refused.length} of ${results.length} ${BULK_LABEL[action]}`;
        if (refused.length)
          throw new ApiError(409, 'PARTLY_REFUSED', `${summaryText}; refused: ${refused.map((r) => `${r.id} ${r.error.code}`).join(', ')}`);
        return `${summaryText}.`;
      }),
    );
  }
  $('job-filters').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const { sort, order } = jobQuery(route().query);
    const limit = $('page-size').value === '50' ? '' : $('page-size').value;
    go(
      href('jobs', {
        state: $('filter-state').value,
        queue: $('filter-queue').value.trim(),
        jobType: $('filter-job-type').value.trim(),
        tenantId: $('filter-tenant').value.trim(),
        createdAfter: dateParam('filter-created-after'),
        createdBefore: dateParam('filter-created-before'),
        sort,
        order,
        limit,
      }),
    );
  });
  $('filter-state').addEventListener('change', () => $('job-filters').requestSubmit());
  $('page-size').addEventListener('change', () => $('job-filters').requestSubmit());
  $('filter-clear').addEventListener('click', () => go('#/jobs'));
  $('run-filters').addEventListener('submit', (ev) => {
    ev.preventDefault();
    go(href('runs', { state: $('run-filter-state').value, name: $('run-filter-name').value.trim() }));
  });
  $('run-filter-state').addEventListener('change', () => $('run-filters').requestSubmit());
  $('outbox-filters').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const state = $('outbox-filter-state').value;
    go(href('outbox', { state: state === 'dead_lettered' ? '' : state, destination: $('outbox-filter-destination').value.trim() }));
  });
  $('outbox-filter-state').addEventListener('change', () => $('outbox-filters').requestSubmit());

  $('search').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const id = $('search-id').value.trim().replace(/^#/, '');
    // A server over several clusters names its jobs <cluster>:<id> (a:123).
    if (!/^(?:[a-z][a-z0-9_]{0,15}:)?[1-9][0-9]{0,18}$/.test(id)) {
      flash('error', `“${id}” is not a job id: ids are positive integers (<cluster>:<id> on a server over several clusters).`);
      return;
    }
    go(`#/jobs/${id}`);
  });

  // A browser may refill the field on reload; the key is only ever in memory, so start empty.
  $('token-input').value = '';
  $('token-save').addEventListener('click', () => {
    useKey($('token-input').value.trim());
    summary.read = false;
    refreshNow().then(() => {
      if (summary.scope === 'tenant' && route().view === 'overview') location.replace('#/jobs');
    });
  });

  document.addEventListener(
    'toggle',
    (ev) => {
      const d = ev.target;
      if (!(d instanceof HTMLDetailsElement) || !d.dataset.key) return;
      if (d.open) open.add(d.dataset.key);
      else open.delete(d.dataset.key);
      if (d.open && d.dataset.fill) void fill(d);
    },
    true,
  );
}
