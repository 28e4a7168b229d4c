// The schedules view: each cron schedule, its next and last fire, why it is disabled.

import { href } from './router.js';
import { $, esc, setRows, whenLong } from './util.js';

export function renderSchedules(page) {
  const rows = page.schedules.map((s) => {
    const status =
      s.status === 'disabled'
        ? `<b data-field="status">disabled</b><br><span class="mute" data-field="disabled-reason">${esc(s.disabledReason)}</span>`
        : `<span data-field="status">${esc(s.status)}</span>`;
    // A disabled schedule is re-enabled by editing it (the API), not by a button.
    const action = s.status === 'enabled' ? 'pause' : s.status === 'paused' ? 'resume' : '';
    return `<tr data-schedule-id="${esc(s.id)}" data-status="${esc(s.status)}">
      <td>${esc(s.name)}<br><span class="mute">${esc(s.tenantId)} · #${esc(s.id)}</span></td>
      <td class="mono">${esc(s.cron)}<br><span class="mute">${esc(s.timezone)} · ${esc(s.misfirePolicy)}</span></td>
      <td><a href="${esc(href('jobs', { jobType: s.jobType, queue: s.queue }))}">${esc(s.jobType)}</a><br><span class="mute">${esc(s.queue)}</span></td>
      <td>${status}</td>
      <td data-field="next-fire">${whenLong(s.nextFireAt)}</td>
      <td data-field="last-fired">${whenLong(s.lastFiredAt)}</td>
      <td>${action ? `<button type="button" data-schedule-action="${action}" data-schedule-id="${esc(s.id)}">${action}</button>` : ''}</td></tr>`;
  });
  setRows(
    'schedules',
    rows,
    'No schedules. Create one with <span class="mono">baton.cron.upsert</span> or <span class="mono">POST /api/cron</span> (docs/cron.md).',
  );
  const disabled = page.schedules.filter((s) => s.status === 'disabled').length;
  $('schedules-total').textContent = `${page.schedules.length}${disabled ? `, ${disabled} disabled` : ''}`;
}
