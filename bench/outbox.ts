// `npx tsx bench/outbox.ts [--server cluster|embedded|<postgres url>] [--runs N] [--messages N]`: the outbox.
//   1. commit -> published latency, p50/p99: a transaction records one message and commits;
//      the clock runs from COMMIT's return to the consumer receiving it: a webhook receiver on
//      loopback, and a core NATS subscriber on the JetStream subject. Measured in the same run
//      as the job start latency (enqueue's commit -> handler start) it is compared with.
//   2. relay throughput, messages/s: N messages committed at once, then drained by one relay
//      (batch 100 and 500) to the webhook receiver and to NATS JetStream.
// One message at a time for latency, 25 ms apart. Writes results/outbox-<time>.md and .json.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { connect, nanos } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import pg from 'pg';
import { createBaton, natsPublisher, webhookPublisher, type Baton, type JobContext, type Publisher } from '../src/index.ts';
import { migrate } from '../src/db/migrate.ts';
import { machineRecord } from './machine.ts';
import { openServer, type ServerChoice } from './server.ts';
import { distribution, spread, type Distribution, type Spread } from './stats.ts';

const { values: args } = parseArgs({
  options: {
    server: { type: 'string', default: 'cluster' },
    runs: { type: 'string', default: '3' },
    samples: { type: 'string', default: '200' },
    messages: { type: 'string', default: '5000' },
    nats: { type: 'string', default: 'nats://127.0.0.1:4222' },
  },
});
const choice: ServerChoice = args.server === 'cluster' || args.server === 'embedded' ? args.server : { url: args.server as string };
const RUNS = Number(args.runs);
const SAMPLES = Number(args.samples);
const MESSAGES = Number(args.messages);
const GAP_MS = 25;
const SECRET = 'whsec_YmVuY2gtc2VjcmV0LTAxMjM0NTY3ODlhYmNkZWY=';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const startedAt = new Date();
const server = await openServer(choice);
try {
  const machine = await machineRecord(server);
  const dbUrl = await server.createDatabase('baton_bench_outbox');
  const pool = new pg.Pool({ connectionString: dbUrl, max: 4 });
  await migrate(pool, { schema: 'baton' });

  // Consumers: the webhook receiver and a core NATS subscriber, each stamping arrivals by key.
  const arrived = new Map<string, number>();
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrived.set(String(req.headers['baton-message-key']), performance.now());
      res.writeHead(204).end();
    });
  });
  receiver.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const nc = await connect({ servers: args.nats });
  const jsm = await jetstreamManager(nc);
  const subject = `baton_bench_${process.pid}`;
  const stream = `BATON_BENCH_${process.pid}`;
  await jsm.streams.add({ name: stream, subjects: [`${subject}.>`], duplicate_window: nanos(60_000), max_msgs: 1_000_000 });
  const sub = nc.subscribe(`${subject}.>`, {
    callback: (_err, m) => {
      const id = m.headers?.get('Nats-Msg-Id');
      if (id) arrived.set(id, performance.now());
    },
  });

  const publishers = (): Record<string, Publisher> => ({
    hooks: webhookPublisher({ url: hookUrl, secret: SECRET }),
    js: natsPublisher({ servers: args.nats }),
  });
  const engine = (batchSize: number, handlerStarts?: Map<string, number>): Baton =>
    createBaton({
      connectionString: dbUrl,
      poolSize: 6,
      queues: handlerStarts ? { lat: 4 } : {},
      handlers: handlerStarts
        ? {
            lat: (ctx: JobContext) => {
              handlerStarts.set(ctx.job.id, performance.now());
            },
          }
        : {},
      outbox: { publishers: publishers(), batchSize },
    });
  const waitArrived = async (keys: string[], ms: number) => {
    const deadline = Date.now() + ms;
    while (keys.some((k) => !arrived.has(k))) {
      if (Date.now() > deadline) throw new Error(`only ${keys.filter((k) => arrived.has(k)).length}/${keys.length} arrived`);
      await sleep(5);
    }
  };

  type RunFigures = {
    job: Distribution;
    jobTx: Distribution;
    webhook: Distribution;
    nats: Distribution;
    throughput: Record<string, number>;
  };
  const runs: RunFigures[] = [];
  for (let run = 0; run < RUNS; run++) {
    await pool.query('TRUNCATE baton.outbox, baton.jobs');
    arrived.clear();
    const starts = new Map<string, number>();
    const baton = engine(100, starts);
    await baton.start();
    const producer = await pool.connect();
    try {
      // Warm-up: connections and statements of every path.
      for (let i = 0; i < 20; i++) {
        await baton.enqueue({ jobType: 'lat', queue: 'lat' });
        await baton.outbox.recordMany([
          { destination: 'hooks', topic: 't', messageKey: `warm-h-${run}-${i}` },
          { destination: 'js', topic: `${subject}.warm`, messageKey: `warm-j-${run}-${i}` },
        ]);
      }
      await waitArrived([`warm-h-${run}-19`, `warm-j-${run}-19`], 30_000);
      const jobLat: number[] = [];
      const jobTxLat: number[] = [];
      const hookLat: number[] = [];
      const natsLat: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        const { job } = await baton.enqueue({ jobType: 'lat', queue: 'lat' });
        const t = performance.now();
        const jobStart = await (async () => {
          while (!starts.has(job.id)) await sleep(1);
          return starts.get(job.id)!;
        })();
        jobLat.push(Math.max(0, jobStart - t));
        {
          await producer.query('BEGIN');
          const { job: txJob } = await baton.enqueue({ jobType: 'lat', queue: 'lat' }, { client: producer });
          await producer.query('COMMIT');
          const committed = performance.now();
          while (!starts.has(txJob.id)) await sleep(1);
          jobTxLat.push(Math.max(0, starts.get(txJob.id)! - committed));
        }
        for (const [dest, topic, into] of [
          ['hooks', 't', hookLat],
          ['js', `${subject}.x`, natsLat],
        ] as const) {
          const key = `${dest}-${run}-${i}`;
          await producer.query('BEGIN');
          await baton.outbox.record({ destination: dest, topic, messageKey: key, payload: { i } }, { client: producer });
          await producer.query('COMMIT');
          const committed = performance.now();
          await waitArrived([key], 10_000);
          into.push(arrived.get(key)! - committed);
        }
        await sleep(GAP_MS);
      }
      runs.push({
        job: distribution(jobLat),
        jobTx: distribution(jobTxLat),
        webhook: distribution(hookLat),
        nats: distribution(natsLat),
        throughput: {},
      });
      console.log(
        `run ${run + 1}/${RUNS}: job start p50 ${distribution(jobLat).p50.toFixed(2)} ms, in a transaction ${distribution(jobTxLat).p50.toFixed(2)} ms; commit -> webhook p50 ${distribution(hookLat).p50.toFixed(2)} ms, -> NATS p50 ${distribution(natsLat).p50.toFixed(2)} ms`,
      );
    } finally {
      producer.release();
      await baton.stop();
    }
    // Throughput: MESSAGES committed in one transaction, drained by a fresh relay.
    for (const batch of [100, 500]) {
      for (const [dest, topic] of [
        ['hooks', 't'],
        ['js', `${subject}.bulk`],
      ] as const) {
        const relay = engine(batch);
        await relay.start();
        const keys = Array.from({ length: MESSAGES }, (_, i) => `bulk-${dest}-${batch}-${run}-${i}`);
        const c = await pool.connect();
        try {
          await c.query('BEGIN');
          for (let i = 0; i < keys.length; i += 1_000) {
            await relay.outbox.recordMany(
              keys.slice(i, i + 1_000).map((k) => ({ destination: dest, topic, messageKey: k })),
              { client: c },
            );
          }
          await c.query('COMMIT');
        } finally {
          c.release();
        }
        const t = performance.now();
        await waitArrived(keys, 300_000);
        // Drained: every message published (its outcome written), not only received.
        while ((await pool.query(`SELECT count(*)::int AS n FROM baton.outbox WHERE state = 'pending'`)).rows[0].n > 0) await sleep(10);
        const seconds = (performance.now() - t) / 1000;
        runs[run]!.throughput[`${dest}/${batch}`] = MESSAGES / seconds;
        console.log(`  throughput ${dest}, batch ${batch}: ${(MESSAGES / seconds).toFixed(0)} messages/s`);
        await relay.stop();
      }
    }
  }
  sub.unsubscribe();
  await jsm.streams.delete(stream).catch(() => undefined);
  await nc.close();
  receiver.closeAllConnections();
  receiver.close();
  await pool.end();

  const agg = (pick: (r: RunFigures) => number): Spread => spread(runs.map(pick));
  const report = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    loadAvgAtEnd: os.loadavg(),
    command: `npx tsx bench/outbox.ts ${process.argv.slice(2).join(' ')}`.trim(),
    machine,
    samplesPerRun: SAMPLES,
    messagesPerThroughputRun: MESSAGES,
    runs,
    latency: {
      jobStart: { p50: agg((r) => r.job.p50), p99: agg((r) => r.job.p99) },
      jobStartInTransaction: { p50: agg((r) => r.jobTx.p50), p99: agg((r) => r.jobTx.p99) },
      ratioWebhookToJobTx: agg((r) => r.webhook.p50 / r.jobTx.p50),
      ratioNatsToJobTx: agg((r) => r.nats.p50 / r.jobTx.p50),
      webhook: { p50: agg((r) => r.webhook.p50), p99: agg((r) => r.webhook.p99) },
      nats: { p50: agg((r) => r.nats.p50), p99: agg((r) => r.nats.p99) },
      ratioWebhookToJob: agg((r) => r.webhook.p50 / r.job.p50),
      ratioNatsToJob: agg((r) => r.nats.p50 / r.job.p50),
    },
    throughput: Object.fromEntries(Object.keys(runs[0]?.throughput ?? {}).map((k) => [k, agg((r) => r.throughput[k]!)])),
  };
  const f = (n: number) => (Number.isNaN(n) ? '-' : n.toFixed(n < 10 ? 2 : 0));
  const s = (x: Spread) => `${f(x.median)} [${f(x.min)}-${f(x.max)}]`;
  const lines = [
    `# Outbox: commit -> published, and relay throughput, ${report.startedAt}`,
    '',
    `Command: \`${report.command}\`. Machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.os}, Node ${machine.node}; load average at start ${machine.loadAvgAtStart.join(' / ')}, at end ${report.loadAvgAtEnd.map((x) => x.toFixed(2)).join(' / ')}. PostgreSQL: ${machine.postgres.source}. NATS ${args.nats}. Commit ${machine.gitCommit}${machine.gitDirty ? ' (dirty)' : ''}.`,
    '',
    `Latency: ${SAMPLES} samples per run, one at a time, ${GAP_MS} ms apart; medians over ${RUNS} runs, [min-max] in brackets. Job start: from enqueue's return (its commit) to the handler starting, in the same runs. Commit -> published: from COMMIT's return to the consumer receiving the message (webhook receiver on loopback; a core NATS subscriber on the stream's subject).`,
    '',
    '| path | p50 (ms) | p99 (ms) | p50 / job start p50 | p50 / job start in a transaction p50 |',
    '| --- | --- | --- | --- | --- |',
    `| job start, enqueue on its own (local wake) | ${s(report.latency.jobStart.p50)} | ${s(report.latency.jobStart.p99)} | 1 | - |`,
    `| job start, enqueue in a transaction (COMMIT -> handler, NOTIFY wake) | ${s(report.latency.jobStartInTransaction.p50)} | ${s(report.latency.jobStartInTransaction.p99)} | - | 1 |`,
    `| commit -> webhook received | ${s(report.latency.webhook.p50)} | ${s(report.latency.webhook.p99)} | ${s(report.latency.ratioWebhookToJob)} | ${s(report.latency.ratioWebhookToJobTx)} |`,
    `| commit -> NATS JetStream message received | ${s(report.latency.nats.p50)} | ${s(report.latency.nats.p99)} | ${s(report.latency.ratioNatsToJob)} | ${s(report.latency.ratioNatsToJobTx)} |`,
    '',
    `Throughput: ${MESSAGES} messages committed in one transaction, drained by one relay (claimed, published side by side, outcomes written per batch) until none is pending; messages/s, medians over ${RUNS} runs.`,
    '',
    '| destination / batch | messages/s |',
    '| --- | --- |',
    ...Object.entries(report.throughput).map(([k, v]) => `| ${k} | ${s(v)} |`),
    '',
  ];
  const stamp = startedAt.toISOString().slice(0, 16).replace(/[:T]/g, '-');
  const dir = path.resolve(import.meta.dirname, '../results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `outbox-${stamp}.json`), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(path.join(dir, `outbox-${stamp}.md`), lines.join('\n'));
  console.log(lines.join('\n'));
} finally {
  await server.close();
}
