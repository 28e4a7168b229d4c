// One latency run with every job's latency printed in order, to find outliers (which job,
// how late) that percentiles hide. Usage:
//   npx tsx bench/latency-trace.ts [variantId=baton-notify-cir] [rate=10] [jobs=30]

import { Child } from './proc.ts';
import { openServer } from './server.ts';

const [variantId = 'baton-notify-cir', rate = '10', jobs = '30'] = process.argv.slice(2);
const server = await openServer();
try {
  const url = await server.createDatabase(`bench_trace_${process.pid}`);
  const worker = new Child('./child/worker.ts');
  const producer = new Child('./child/producer.ts');
  await Promise.all([worker.waitFor('booted', 30_000), producer.waitFor('booted', 30_000)]);
  worker.send({ type: 'run', role: 'latency', variantId, url });
  await worker.waitFor('ready', 60_000);
  producer.send({ type: 'run', variantId, url, via: 'library', rate: Number(rate), jobs: Number(jobs) });
  await producer.waitFor('ready', 30_000);
  producer.send({ type: 'go' });
  const p = await producer.waitFor<{ commits: Array<[number, number]>; callMs: number[] }>('result', 600_000);
  worker.send({ type: 'collect', expected: p.commits.length, deadlineMs: 5_000 });
  const w = await worker.waitFor<{ starts: Array<[number, number]>; verify: { detail: string } }>('result', 60_000);
  producer.send({ type: 'close' });
  const starts = new Map(w.starts);
  process.stdout.write(`latency ms by seq: ${p.commits.map(([s, t]) => `${s}:${((starts.get(s) ?? Number.NaN) - t).toFixed(1)}`).join(' ')}\n`);
  process.stdout.write(`enqueue call ms: ${p.callMs.map((x) => x.toFixed(1)).join(' ')}\n`);
  process.stdout.write(`verify: ${w.verify.detail}\n`);
  await Promise.all([producer.end(), worker.end()]);
} finally {
  await server.close();
}
process.exit(0);
