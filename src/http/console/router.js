// Hash routing: #/<view>[/<id>][?filters], so every view and filter has a URL to link to.

import { qs } from './util.js';

const VIEWS = ['overview', 'jobs', 'job', 'queues', 'runs', 'run', 'schedules', 'outbox', 'flow', 'dlq', 'workers'];
export const TITLES = {
  overview: 'Overview',
  jobs: 'Jobs',
  job: 'Job',
  queues: 'Queues',
  runs: 'Workflow runs',
  run: 'Run',
  schedules: 'Schedules',
  outbox: 'Outbox',
  flow: 'Flow control',
  dlq: 'Dead letters',
  workers: 'Workers',
};

/** The view, id and filters the URL names. */
export function route() {
  const m = /^#\/?([a-z]*)(?:\/([^?]*))?(?:\?(.*))?$/.exec(location.hash || '#/');
  let view = m ? m[1] || 'overview' : 'overview';
  const id = m?.[2] ? decodeURIComponent(m[2]) : null;
  const query = Object.fromEntries(new URLSearchParams(m?.[3] ? m[3] : ''));
  if (view === 'jobs' && id !== null) view = 'job';
  if (view === 'runs' && id !== null) view = 'run';
  if (!VIEWS.includes(view)) view = 'overview';
  return { view, id, query };
}
export const href = (view, query = {}) => {
  const q = qs(query);
  return `#/${view}${q ? `?${q}` : ''}`;
};
