// One job (#/jobs/<id>): its fields, times and durations, every failed attempt, payload, result.

import { ApiError, api } from './api.js';
import { actions, chainItems } from './jobs.js';
import { href } from './router.js';
import { $, ago, duration, esc, isScheduled, progressHtml, sizeBars, stateBadge, whenLong, windowHtml } from './util.js';

function renderDetail(job) {
  // Waited from when it was due (or created, if later) to its last start.
  const dueAt = Date.parse(job.runAt) > Date.parse(job.createdAt) ? job.runAt : job.createdAt;
  const durations = [
    ['waited (due → started)', duration(dueAt, job.startedAt)],
    ['ran (started → finished)', duration(job.startedAt, job.finishedAt)],
    ['total (created → finished)', duration(job.createdAt, job.finishedAt)],
  ];
  const lease = job.leaseOwner
    ? `<dt>lease</dt><dd class="mono">${esc(job.leaseOwner)} · token ${esc(job.token)} · expires ${esc(ago(job.leaseExpiresAt))}</dd>`
    : '';
  const attempts = job.errors.length
    ? `<ol class="chain" id="detail-attempts">${chainItems(job.errors)}</ol>`
    : '<p class="mute" id="detail-attempts">No failed attempts.</p>';
  const scheduled = isScheduled(job);
  $('detail-id').textContent = `#${job.id}`;
  $('detail-state').innerHTML = stateBadge(job.state, scheduled);
  const section = $('job-detail');
  section.dataset.jobId = job.id;
  section.dataset.state = job.state;
  delete section.dataset.error;
  $('detail-body').innerHTML = `<div class="toolbar" data-job-id="${esc(job.id)}">${actions(job)}</div>
    <div class="detail-grid">
      <div><dl>
        <dt>type</dt><dd><a href="${esc(href('jobs', { jobType: job.jobType }))}">${esc(job.jobType)}</a></dd>
        <dt>queue</dt><dd><a href="${esc(href('jobs', { queue: job.queue }))}">${esc(job.queue)}</a></dd><dt>tenant</dt><dd>${esc(job.tenantId)}</dd>
        <dt>priority</dt><dd>${esc(job.priority)}</dd><dt>attempt</dt><dd data-field="attempt">${esc(job.attempt)} / ${esc(job.maxAttempts)}</dd>
        <dt>replays</dt><dd>${esc(job.replayCount)}</dd>${job.idempotencyKey ? `<dt>idempotency key</dt><dd class="mono">${esc(job.idempotencyKey)}</dd>` : ''}
        ${job.reason ? `<dt>reason</dt><dd>${esc(job.reason)}</dd>` : ''}${lease}
        ${job.progress != null ? `<dt>progress</dt><dd>${progressHtml(job.progress, 200)}</dd>` : ''}
        ${job.enqueueWindow ? `<dt>${esc(job.enqueueWindow.kind)}</dt><dd>${windowHtml(job.enqueueWindow)}</dd>` : ''}
      </dl></div>
      <div><dl id="detail-times">
        <dt>created</dt><dd data-field="createdAt">${whenLong(job.createdAt)}</dd>
        <dt>${scheduled ? 'runs' : 'due'}</dt><dd data-field="runAt">${whenLong(job.runAt)}</dd>
        <dt>started</dt><dd data-field="startedAt">${whenLong(job.startedAt)}</dd>
        <dt>finished</dt><dd data-field="finishedAt">${whenLong(job.finishedAt)}</dd>
        ${job.cancelRequestedAt ? `<dt>cancel requested</dt><dd data-field="cancelRequestedAt">${whenLong(job.cancelRequestedAt)}</dd>` : ''}
        <dt>updated</dt><dd>${whenLong(job.updatedAt)}</dd>
      </dl><dl id="detail-durations">${durations.map(([k, v]) => `<dt>${k}</dt><dd data-field="${k.split(' ')[0]}">${v ?? '<span class="mute">—</span>'}</dd>`).join('')}</dl></div>
    </div>
    <h2>Attempts</h2>${attempts}
    <h2>Payload</h2><pre data-field="payload">${esc(JSON.stringify(job.payload, null, 2))}</pre>
    ${job.state === 'succeeded' ? `<h2>Result</h2><pre data-field="result">${esc(JSON.stringify(job.result, null, 2))}</pre>` : ''}`;
  sizeBars($('detail-body'));
}

export async function refreshDetail(id) {
  const section = $('job-detail');
  try {
    const job = await api('GET', `/api/jobs/${encodeURIComponent(id)}`);
    // Re-rendered only when the job changed (or time moved a scheduled job to due), so a
    // stack trace being read or selected stays put.
    const stamp = `${job.updatedAt}|${isScheduled(job)}`;
    if (section.dataset.jobId === job.id && section.dataset.stamp === stamp && !section.dataset.error) return;
    renderDetail(job);
    section.dataset.stamp = stamp;
  } catch (err) {
    if (!(err instanceof ApiError) || err.status === 0 || err.status >= 500) throw err;
    section.dataset.jobId = id;
    section.dataset.error = err.code;
    delete section.dataset.stamp;
    $('detail-id').textContent = `#${id}`;
    $('detail-state').innerHTML = '';
    $('detail-body').innerHTML = `<p class="empty">${err.status === 404 ? `No job ${esc(id)}.` : esc(err.toString())}</p>`;
  }
}
