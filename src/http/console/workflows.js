// The workflow views: the runs list (#/runs) and one run's timeline of steps (#/runs/<id>).

import { ApiError, api } from './api.js';
import { $, ago, duration, esc, qs, setRows, stateBadge, when, whenLong } from './util.js';

const RUNS_PAGE = 50;

const farAway = (iso) => !iso || iso.startsWith('9999');
// What a sleeping or waiting run waits for: its event (with a timeout, if any) or its wake-up time.
const waitingFor = (r) => {
  // A blocked run waits for an operator: why its code cannot replay its history.
  if (r.state === 'blocked' && r.blockedReason)
    return `<span data-field="blocked-reason" title="${esc(r.blockedReason.message)}">${esc(r.blockedReason.code)}: ${esc(r.blockedReason.steps.join(', '))}</span>`;
  if (r.state !== 'sleeping' && r.state !== 'waiting') return '<span class="mute">—</span>';
  const until = farAway(r.wakeAt) ? '' : when(r.wakeAt);
  if (r.waitEvent) return `event <b data-field="wait-event">${esc(r.waitEvent)}</b>${until ? ` · times out ${until}` : ''}`;
  return r.state === 'sleeping' ? `wakes ${until}` : `children${until ? ` · looks again ${until}` : ''}`;
};

function runActions(r) {
  const send =
    r.state === 'waiting' && r.waitEvent
      ? `<button type="button" data-run-action="event" data-run-id="${esc(r.id)}" data-event="${esc(r.waitEvent)}">send ${esc(r.waitEvent)}</button>`
      : '';
  const cancel = ['running', 'sleeping', 'waiting', 'blocked'].includes(r.state)
    ? `<button type="button" data-run-action="cancel" data-run-id="${esc(r.id)}">cancel</button>`
    : '';
  const replay = ['dead_lettered', 'cancelled', 'blocked'].includes(r.state)
    ? `<button type="button" data-run-action="replay" data-run-id="${esc(r.id)}">${r.state === 'blocked' ? 'resume' : 'replay'}</button>`
    : '';
  return [send, cancel, replay].filter(Boolean).join(' ');
}

export async function refreshRuns(q) {
  const offset = Math.max(0, Number(q.offset) || 0);
  const page = await api('GET', `/api/workflows/runs?${qs({ state: q.state, name: q.name, limit: RUNS_PAGE, offset })}`);
  const rows = page.runs.map(
    (r) => `<tr data-run-id="${esc(r.id)}" data-state="${esc(r.state)}" data-name="${esc(r.name)}">
      <td><a href="#/runs/${esc(r.id)}">${esc(r.name)}</a><br><span class="mute">${esc(r.tenantId)} · #${esc(r.id)}</span></td>
      <td>${stateBadge(r.state)}</td><td class="num">${esc(r.progress)}</td>
      <td data-field="waiting-for">${waitingFor(r)}</td><td>${when(r.createdAt)}</td><td>${when(r.finishedAt)}</td>
      <td>${runActions(r)}</td></tr>`,
  );
  setRows(
    'runs',
    rows,
    `No workflow runs${q.state || q.name ? ' match' : ''}.${document.body.dataset.demo === 'on' && !q.state ? ' Start demo orders from the <a href="#/">overview</a>.' : ''}`,
  );
  $('runs-total').textContent = `${page.runs.length}${page.runs.length === RUNS_PAGE ? '+' : ''}`;
}

/** A step's outcome as people read it: an event wait that ended without its event timed out. */
const timedOut = (st) => st.kind === 'event' && st.status === 'succeeded' && st.output === null;

export async function refreshRun(id) {
  const box = $('run-timeline');
  let run;
  try {
    run = await api('GET', `/api/workflows/runs/${encodeURIComponent(id)}`);
  } catch (err) {
    if (!(err instanceof ApiError) || err.status === 0 || err.status >= 500) throw err;
    box.dataset.error = err.code;
    delete box.dataset.runId;
    $('timeline-id').textContent = `#${id}`;
    $('timeline-state').textContent = '';
    $('timeline-actions').innerHTML = '';
    $('timeline-steps').innerHTML = `<li class="mute">${err.status === 404 ? `No run ${esc(id)}.` : esc(err.toString())}</li>`;
    return;
  }
  delete box.dataset.error;
  box.dataset.runId = run.id;
  box.dataset.state = run.state;
  $('timeline-id').textContent = `#${run.id} ${run.name}`;
  $('timeline-state').innerHTML = stateBadge(run.state);
  $('timeline-actions').innerHTML =
    `${runActions(run)} <span class="mute">${esc(run.tenantId)} · started ${esc(ago(run.createdAt))}${['waiting', 'sleeping', 'blocked'].includes(run.state) ? ` · ${waitingFor(run)}` : ''}</span>`;
  const items = run.steps.map((st) => {
    const wait =
      st.status === 'waiting'
        ? st.waitEvent
          ? ` · waits for event <b>${esc(st.waitEvent)}</b>${farAway(st.wakeAt) ? '' : ` until ${whenLong(st.wakeAt)}`}`
          : ` · wakes ${whenLong(st.wakeAt)}`
        : '';
    const took = duration(st.startedAt, st.finishedAt);
    const out = timedOut(st);
    const status = out ? 'timed out' : st.status;
    return `<li data-step-key="${esc(st.key)}" data-kind="${esc(st.kind)}" data-status="${esc(st.status)}" data-timed-out="${out}">
      <b>${esc(st.key)}</b> <span class="mute">${esc(st.kind)}</span> · <span class="step-status">${esc(status)}</span>
      ${out ? ` <span class="mute">(no <b>${esc(st.waitEvent ?? 'event')}</b> came in time)</span>` : ''}
      ${st.attempts > 1 ? ` · ${esc(st.attempts)} attempts` : ''}${took ? ` · ${esc(took)}` : ''}${wait}
      ${st.status === 'succeeded' && st.output !== null ? `<div class="mono mute">${esc(JSON.stringify(st.output).slice(0, 200))}</div>` : ''}</li>`;
  });
  $('timeline-steps').innerHTML = items.length ? items.join('') : '<li class="mute">No steps yet.</li>';
}
