// A child process for test/engine/leader-processes.test.ts: a real engine on queue `q` that may
// lead, with retention deleting succeeded jobs at once. It writes JSON lines to stdout: 'ready'
// (with its worker id), each 'leadership' change, and a 'pong' (with stats().leader) for each
// 'ping' line on stdin, which it answers only after the timers that came due meanwhile have run.
// Configured by environment: LEADER_DB_URL, LEADER_LEASE_MS.

import { createInterface } from 'node:readline';
import { createBaton } from '../../src/index.ts';

const say = (m: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(m)}\n`);

const baton = createBaton({
  connectionString: process.env.LEADER_DB_URL!,
  queues: { q: 1 },
  poolSize: 3,
  pollIntervalMs: 600_000,
  leaderLeaseMs: Number(process.env.LEADER_LEASE_MS ?? 1_000),
  retention: { succeededMs: 0, cancelledMs: null, deadLetteredMs: null },
  retentionIntervalMs: 20,
  vacuumDeadTuples: null,
});
baton.events.on('leadership', (e) => say({ type: 'leadership', leader: e.leader }));
await baton.start();
say({ type: 'ready', workerId: baton.config.workerId });
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'ping') setImmediate(() => say({ type: 'pong', leader: baton.stats().leader }));
});
process.on('SIGTERM', () => void baton.stop({ drainMs: 0 }).then(() => process.exit(0)));
process.stdin.on('end', () => process.exit(1));
