// The outbox view: counts by destination and the messages of one state (dead letters first).

import { api } from './api.js';
import { href } from './router.js';
import { $, esc, human, qs, setRows, when } from './util.js';

export async function refreshOutbox(q) {
  const state = ['pending', 'published', 'dead_lettered'].includes(q.state) ? q.state : 'dead_lettered';
  const [stats, list] = await Promise.all([
    api('GET', '/api/outbox/stats'),
    api('GET', `/api/outbox/messages?${qs({ state, destination: q.destination, limit: 50 })}`),
  ]);
  const dests = stats.destinations.map(
    (d) => `<tr data-destination="${esc(d.destination)}"><td>${esc(d.destination)}</td>
    <td class="num" data-field="pending"><a href="${esc(href('outbox', { state: 'pending', destination: d.destination }))}">${d.counts.pending}</a></td>
    <td class="num" data-field="published"><a href="${esc(href('outbox', { state: 'published', destination: d.destination }))}">${d.counts.published}</a></td>
    <td class="num" data-field="dead_lettered"><a href="${esc(href('outbox', { state: 'dead_lettered', destination: d.destination }))}">${d.counts.dead_lettered}</a></td></tr>`,
  );
  setRows(
    'outbox-destinations',
    dests,
    'No outbox messages: record them with <span class="mono">baton.outbox.record</span> (docs/outbox.md).',
  );
  const age = stats.oldestPendingAgeSeconds;
  $('outbox-total').textContent = `${stats.totals.pending} pending${age === null ? '' : `, the oldest for ${human(age * 1000)}`}`;
  $('outbox-messages-title').textContent =
    `${state === 'dead_lettered' ? 'Dead-lettered' : state === 'pending' ? 'Pending' : 'Published'} messages${q.destination ? ` to ${q.destination}` : ''}`;
  const rows = list.messages.map(
    (m) => `<tr data-outbox-id="${esc(m.id)}" data-state="${esc(m.state)}"><td>${esc(m.id)}</td><td>${esc(m.destination)}</td>
    <td class="mono">${esc(m.topic)}</td><td class="mono">${esc(m.messageKey)}</td><td class="num">${m.attempt}/${m.maxAttempts}</td>
    <td>${esc(m.deadLetterReason ?? '')}</td><td>${m.lastError ? `${esc(m.lastError.name)}: ${esc(m.lastError.message)}` : ''}</td>
    <td class="mute">${when(m.finishedAt)}</td>
    <td>${m.state === 'pending' ? '' : `<button type="button" data-outbox-replay="${esc(m.id)}">replay</button>`}</td></tr>`,
  );
  setRows('outbox-dlq', rows, `No ${state.replace('_', '-')} messages.`);
}
