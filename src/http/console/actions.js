// What the buttons do: the demo buttons, replay-all, and every row's button (a job's replay,
// cancel or run now; a queue's pause; a run's event, cancel or replay; a schedule's pause; an
// outbox message's replay), plus sorting the listing by a column. Each says how it went.

import { ApiError, api, flash } from './api.js';
import { jobQuery } from './jobs.js';
import { go, refreshNow } from './refresh.js';
import { href, route } from './router.js';
import { $, ago } from './util.js';

/** Runs an action, flashes its outcome, then refreshes the view. */
export async function act(label, fn) {
  try {
    const msg = await fn();
    if (msg) flash('ok', msg);
  } catch (err) {
    flash('error', `${label} failed: ${err instanceof ApiError ? err.toString() : String(err)}`);
  }
  await refreshNow();
}

const DEMO = [
  { jobType: 'noop', payload: { demo: 1 } },
  { jobType: 'noop', payload: { demo: 2 } },
  { jobType: 'noop', payload: { demo: 3 } },
  { jobType: 'noop', payload: { demo: 'delayed' }, delayMs: 5000 },
  { jobType: 'sleep', payload: { ms: 3000 } },
  { jobType: 'sleep', payload: { ms: 3000 } },
  { jobType: 'boom', payload: { demo: true }, maxAttempts: 3 },
  { jobType: 'poison', payload: { demo: true } },
];

export function wireActions() {
  $('enqueue-demo').addEventListener('click', () =>
    act('Enqueue demo jobs', async () => {
      const r = await api('POST', '/api/jobs/batch', { jobs: DEMO });
      return `Enqueued ${r.results.length} demo jobs (ids ${r.results.map((x) => x.job.id).join(', ')}).`;
    }),
  );

  $('start-demo-orders').addEventListener('click', () =>
    act('Start demo orders', async () => {
      const ids = [];
      for (const [i, sku] of ['book', 'lamp', 'mug'].entries()) {
        const r = await api('POST', '/api/workflows/place-order/runs', { input: { sku, amount: 1000 + i, shipWithinMs: 60000 } });
        ids.push(r.run.id);
      }
      return `Started place-order runs ${ids.join(', ')}: each waits for the event shipped.`;
    }),
  );

  $('replay-all-dlq').addEventListener('click', () =>
    act('Replay all dead letters', async () => {
      const r = await api('POST', '/api/dlq/replay');
      return r.replayed ? `Replayed ${r.replayed} dead-lettered job(s).` : 'Nothing to replay: the dead-letter queue is empty.';
    }),
  );

  $('outbox-replay-all').addEventListener('click', () =>
    act('Replay outbox dead letters', async () => {
      const r = await api('POST', '/api/outbox/dlq/replay');
      return r.replayed ? `Replayed ${r.replayed} outbox message(s).` : 'Nothing to replay: no outbox message is dead-lettered.';
    }),
  );

  document.addEventListener('click', (ev) => {
    const b = ev.target.closest('button[data-action]');
    if (b) {
      const id = b.dataset.jobId;
      const action = b.dataset.action;
      b.disabled = true;
      act(`${action} job ${id}`, async () => {
        const job = await api('POST', `/api/jobs/${encodeURIComponent(id)}/${action}`);
        if (action === 'cancel' && job.state !== 'cancelled')
          return `Job ${id} is ${job.state}: asked to stop (it ends cancelled if its handler stops, succeeded if it finishes anyway).`;
        return `Job ${id} is now ${job.state}${action === 'replay' ? ` (replay #${job.replayCount})` : action === 'run-now' ? ', due now' : ''}.`;
      });
      return;
    }
    const q = ev.target.closest('button[data-queue-action]');
    if (q) {
      const { queue, queueAction } = q.dataset;
      q.disabled = true;
      act(`${queueAction} queue ${queue}`, async () => {
        const r = await api('POST', `/api/queues/${encodeURIComponent(queue)}/${queueAction}`);
        return r.paused ? `Queue ${queue} is paused: no worker claims from it until it is resumed.` : `Queue ${queue} is resumed.`;
      });
      return;
    }
    const rb = ev.target.closest('button[data-run-action]');
    if (rb) {
      const { runId: id, runAction, event } = rb.dataset;
      rb.disabled = true;
      act(`${runAction} run ${id}`, async () => {
        if (runAction === 'event') {
          await api('POST', `/api/workflows/runs/${encodeURIComponent(id)}/events/${encodeURIComponent(event)}`, {
            payload: { from: 'console' },
          });
          return `Sent ${event} to run ${id}.`;
        }
        const r = await api('POST', `/api/workflows/runs/${encodeURIComponent(id)}/${runAction}`);
        return `Run ${id} is now ${r.state}.`;
      });
      return;
    }
    const sb = ev.target.closest('button[data-schedule-action]');
    if (sb) {
      const { scheduleId, scheduleAction } = sb.dataset;
      sb.disabled = true;
      act(`${scheduleAction} schedule ${scheduleId}`, async () => {
        const r = await api('PATCH', `/api/cron/${encodeURIComponent(scheduleId)}`, { paused: scheduleAction === 'pause' });
        return `Schedule ${r.name} is ${r.status}${r.status === 'enabled' && r.nextFireAt ? `; next fire ${ago(r.nextFireAt)}` : ''}.`;
      });
      return;
    }
    const ob = ev.target.closest('button[data-outbox-replay]');
    if (ob) {
      const id = ob.dataset.outboxReplay;
      ob.disabled = true;
      act(`replay outbox message ${id}`, async () => {
        const m = await api('POST', `/api/outbox/messages/${encodeURIComponent(id)}/replay`);
        return `Outbox message ${id} is ${m.state} again (replay #${m.replayCount}).`;
      });
      return;
    }
    const th = ev.target.closest('#jobs th[data-sort]');
    if (th) {
      const q = jobQuery(route().query);
      const key = th.dataset.sort;
      const current = q.sort ?? 'id';
      // A new column starts in the order people expect of it: names A→Z, times and ids newest first.
      const order =
        current === key
          ? (q.order ?? 'desc') === 'asc'
            ? 'desc'
            : 'asc'
          : ['state', 'jobType', 'queue', 'tenantId'].includes(key)
            ? 'asc'
            : 'desc';
      go(
        href('jobs', {
          ...q,
          sort: key === 'id' && order === 'desc' ? undefined : key,
          order: key === 'id' && order === 'desc' ? undefined : order,
          offset: undefined,
        }),
      );
    }
  });
}
