// The fleet-wide views, drawn from the summary: queues (also the overview's busiest ones),
// workers, and flow control's limits and tenants.

import { href } from './router.js';
import { countTotals } from './summary.js';
import { $, ago, esc, STATES, setRows, when } from './util.js';

/** The queue table (#/queues), or the overview's: the busiest `limit` queues by live jobs. */
export function renderQueues(stats, tableId = 'queues', limit = Infinity) {
  const cols = ['pending', 'scheduled', ...STATES.slice(1)];
  const liveOf = (q) => q.counts.pending + q.counts.waiting + q.counts.leased + q.counts.running;
  const shown = limit === Infinity ? stats.queues : [...stats.queues].sort((a, b) => liveOf(b) - liveOf(a)).slice(0, limit);
  const rows = shown.map(({ queue, counts, paused, pausedAt, scheduled }) => {
    const c = { ...counts, pending: counts.pending - (scheduled || 0), scheduled: scheduled || 0 };
    const badgeHtml = paused ? `<span class="paused-badge" data-field="paused" title="paused ${esc(ago(pausedAt))}">paused</span>` : '';
    const action = paused ? 'resume' : 'pause';
    return `<tr data-queue="${esc(queue)}" data-paused="${paused}"><td>${esc(queue)}${badgeHtml}</td>${cols
      .map(
        (s) =>
          `<td class="num ${c[s] ? '' : 'zero'}" data-state="${s}"><a href="${esc(href('jobs', { queue, state: s }))}">${c[s] || 0}</a></td>`,
      )
      .join('')}
      <td><button type="button" data-queue-action="${action}" data-queue="${esc(queue)}"
        title="${paused ? 'let workers claim from this queue again' : 'stop every worker process claiming from this queue'}">${action}</button></td></tr>`;
  });
  setRows(
    tableId,
    rows,
    `No jobs yet.${document.body.dataset.demo === 'on' ? ' Enqueue demo jobs from the <a href="#/">overview</a>.' : ''}`,
  );
  const t = countTotals(stats);
  // Live: due or running now; the scheduled ones are not yet.
  const live = t.pending - t.scheduled + t.leased + t.running;
  const paused = stats.queues.filter((q) => q.paused).length;
  const total = $(`${tableId}-total`);
  total.textContent = `${stats.queues.length} queue(s), ${live} live${paused ? `, ${paused} paused` : ''}${shown.length < stats.queues.length ? `; the ${shown.length} busiest shown` : ''}`;
  total.dataset.live = String(live);
}

export function renderWorkers(workers) {
  const rows = workers.map((w) => {
    const cap = Object.values(w.queues || {}).reduce((a, b) => a + b, 0);
    const pct = cap ? Math.min(100, Math.round((w.inFlight / cap) * 100)) : 0;
    const queues =
      Object.entries(w.queues || {})
        .map(([q, n]) => `${esc(q)}:${n}`)
        .join(', ') || '<span class="mute">producer only</span>';
    return `<tr data-worker-id="${esc(w.id)}" data-alive="${w.alive}"><td><span class="mono">${esc(w.id)}</span><br>
      <span class="mute">${esc(w.hostname)} pid ${esc(w.pid)}${w.leader ? ' · leader' : ''}${w.alive ? '' : ' · <b>session gone</b>'}</span></td>
      <td>${queues}</td>
      <td><div class="bar" title="${w.inFlight}/${cap}"><span data-pct="${pct}"></span></div>
        <span class="mute" data-field="occupancy">${w.inFlight} / ${cap} busy</span></td>
      <td class="mute">${when(w.lastSeenAt)}</td></tr>`;
  });
  setRows('workers', rows, 'No live workers.');
  // Set through the DOM: the page's CSP refuses style attributes in markup.
  for (const bar of $('workers').querySelectorAll('.bar > span[data-pct]')) bar.style.width = `${bar.dataset.pct}%`;
  $('workers-total').textContent = `${workers.filter((w) => w.alive).length} live`;
}

// Queue and key limits with what runs and waits under them, and per-tenant depth and running.
export function renderFlow(flow) {
  const num = (v) => (v === null || v === undefined ? '<span class="mute">—</span>' : esc(String(Math.round(v * 10) / 10)));
  const rate = (r) => (r ? `${esc(String(r.limit))} / ${esc(String(r.periodMs))} ms` : '<span class="mute">—</span>');
  const heldOf = (cap, running, tokens, due) =>
    !due ? '' : cap !== null && running >= cap ? `<b>${due} (cap)</b>` : tokens !== null && tokens < 1 ? `<b>${due} (rate)</b>` : '';
  const rows = [
    ...flow.queues.map(
      (q) => `<tr data-flow-queue="${esc(q.queue)}"><td>${esc(q.queue)} <span class="mute">queue${q.keyed ? ', keyed' : ''}</span></td>
      <td class="num">${q.running}</td><td class="num">${num(q.concurrencyLimit)}</td><td>${rate(q.rateLimit)}</td>
      <td class="num">${num(q.tokens)}</td><td class="num">${q.due}</td><td data-field="held">${heldOf(q.concurrencyLimit, q.running, q.tokens, q.due)}</td></tr>`,
    ),
    ...flow.keys.map(
      (k) => `<tr data-flow-key="${esc(k.key)}"><td class="mono">${esc(k.key)} <span class="mute">key</span></td>
      <td class="num">${k.running}</td><td class="num">${num(k.concurrencyLimit)}</td><td>${k.rateLimit === null ? '<span class="mute">—</span>' : `${esc(String(k.rateLimit))} / period`}</td>
      <td class="num">${num(k.tokens)}</td><td class="num">${k.due}</td><td data-field="held">${heldOf(k.concurrencyLimit, k.running, k.tokens, k.due)}</td></tr>`,
    ),
  ];
  setRows('flow-limits', rows, 'No caps, rate limits or keyed jobs (docs/flow-control.md).');
  const weight = new Map(flow.weights.map((w) => [w.tenantId, w.weight]));
  const tenants = flow.tenants.map(
    (t) => `<tr data-flow-tenant="${esc(t.queue)}/${esc(t.tenantId)}"><td>${esc(t.queue)}</td><td>${esc(t.tenantId)}</td>
    <td class="num">${weight.get(t.tenantId) ?? 1}</td><td class="num">${t.pending}</td><td class="num">${t.running}</td></tr>`,
  );
  setRows('flow-tenants', tenants, 'No pending or running jobs.');
  const held = flow.held.reduce((n, h) => n + h.jobs, 0);
  $('flow-total').textContent = `${flow.tenants.length} queue/tenant pairs${held ? `, ${held} held back` : ''}`;
}
