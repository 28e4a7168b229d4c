// `npx tsx bench/outbox.ts [--server cluster|embedded|<postgres url>] [--runs N] [--messages N]
//   [--parts latency,throughput,key] [--key-messages N] [--out dir]`: the outbox.
//   1. latency: commit -> published, p50/p99: a transaction records one message and commits;
//      the clock runs from COMMIT's return to the consumer receiving it: a webhook receiver on
//      loopback, and a core NATS subscriber on the JetStream subject. Measured in the same run
//      as the job start latency (enqueue's commit -> handler start) it is compared with.
//   2. throughput: relay throughput, messages/s: N messages committed at once, then drained by
//      one relay (batch 100 and 500) to the webhook receiver and to NATS JetStream.
//   3. key: a backlog on one ordering key: --key-messages (1,000) messages of one key committed
//      at once, drained by one relay with the default options, to NATS JetStream and to the
//      webhook receiver: seconds from COMMIT to the last one published, and whether the
//      consumer received them in record order.
// One message at a time for latency, 25 ms apart. Writes <out>/outbox-<time>.md and .json
// (--out defaults to results/).

import { mkdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, nanos } from '@nats-io/transport-node';
import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
import { type Baton, createBaton, type JobContext, natsPublisher, type Publisher, webhookPublisher } from '../src/index.ts';
import { machineRecord } from './machine.ts';
import { openServer, type ServerChoice } from './server.ts';
import { type Distribution, distribution, type Spread, spread } from './stats.ts';

const { values: args } = parseArgs({
  options: {
    server: { type: 'string', default: 'cluster' },
    runs: { type: 'string', default: '3' },
    samples: { type: 'string', default: '200' },
    messages: { type: 'string', default: '5000' },
    parts: { type: 'string', default: 'latency,throughput,key' },
    'key-messages': { type: 'string', default: '1000' },
    out: { type: 'string' },
    nats: { type: 'string', default: 'nats://127.0.0.1:4222' },
  },
});
const choice: ServerChoice = args.server === 'cluster' || args.server === 'embedded' ? args.server : { url: args.server as string };
const RUNS = Number(args.runs);
const SAMPLES = Number(args.samples);
const MESSAGES = Number(args.messages);
const KEY_MESSAGES = Number(args['key-messages']);
const PARTS = new Set((args.parts as string).split(',').map((x) => x.trim()));
for (const part of PARTS) if (!['latency', 'throughput', 'key'].includes(part)) throw new Error(`unknown part ${part}`);
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
  // Every arrival in the order it came (the key part checks its order).
  const arrivals: string[] = [];
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const key = String(req.headers['baton-message-key']);
      arrived.set(key, performance.now());
      arrivals.push(key);
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
      if (id) {
        arrived.set(id, performance.now());
        arrivals.push(id);
      }
    },
  });

  const publishers = (): Record<string, Publisher> => ({
    hooks: webhookPublisher({ url: hookUrl, secret: SECRET }),
    js: natsPublisher({ servers: args.nats }),
  });
  const engine = (batchSize: number | undefined, handlerStarts?: Map<string, number>): Baton =>
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
      outbox: { publishers: publishers(), ...(batchSize === undefined ? {} : { batchSize }) },
    });
  const waitArrived = async (keys: string[], ms: number) => {
    const deadline = Date.now() + ms;
    while (keys.some((k) => !arrived.has(k))) {
      if (Date.now() > deadline) throw new Error(`only ${keys.filter((k) => arrived.has(k)).length}/${keys.length} arrived`);
      await sleep(5);
    }
  };

  type RunFigures = {
    /** The latency part's distributions (absent when it did not run). */
    job?: Distribution;
    jobTx?: Distribution;
    webhook?: Distribution;
    nats?: Distribution;
    throughput: Record<string, number>;
    /**
     * One key's backlog, by destination: seconds from COMMIT to drained, whether it arrived in
     * order, and the relay's counters (retries or fenced writes would explain a slow run).
     */
    key: Record<string, { seconds: number; inOrder: boolean; relay: unknown }>;
  };

  /** Commits `keys` in one transaction (1,000 per INSERT), the clock starting at COMMIT's return. */
  const commitBacklog = async (baton: Baton, dest: string, topic: string, keys: string[], orderingKey?: string) => {
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      for (let i = 0; i < keys.length; i += 1_000) {
        await baton.outbox.recordMany(
          keys.slice(i, i + 1_000).map((k) => ({ destination: dest, topic, messageKey: k, ...(orderingKey ? { orderingKey } : {}) })),
          { client: c },
        );
      }
      await c.query('COMMIT');
    } finally {
      c.release();
    }
    return performance.now();
  };
  /** Waits until every key arrived and none is pending (its outcome written, not only received). */
  const drained = async (keys: string[], from: number) => {
    await waitArrived(keys, 300_000);
    while ((await pool.query(`SELECT count(*)::int AS n FROM baton.outbox WHERE state = 'pending'`)).rows[0].n > 0) await sleep(10);
    return (performance.now() - from) / 1000;
  };

  const latencyPart = async (run: number, figures: RunFigures) => {
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
      Object.assign(figures, {
        job: distribution(jobLat),
        jobTx: distribution(jobTxLat),
        webhook: distribution(hookLat),
        nats: distribution(natsLat),
      });
      console.log(
        `run ${run + 1}/${RUNS}: job start p50 ${distribution(jobLat).p50.toFixed(2)} ms, in a transaction ${distribution(jobTxLat).p50.toFixed(2)} ms; commit -> webhook p50 ${distribution(hookLat).p50.toFixed(2)} ms, -> NATS p50 ${distribution(natsLat).p50.toFixed(2)} ms`,
      );
    } finally {
      producer.release();
      await baton.stop();
    }
  };

  // Throughput: MESSAGES committed in one transaction, drained by a fresh relay.
  const throughputPart = async (run: number, figures: RunFigures) => {
    for (const batch of [100, 500]) {
      for (const [dest, topic] of [
        ['hooks', 't'],
        ['js', `${subject}.bulk`],
      ] as const) {
        const relay = engine(batch);
        await relay.start();
        const keys = Array.from({ length: MESSAGES }, (_, i) => `bulk-${dest}-${batch}-${run}-${i}`);
        const seconds = await drained(keys, await commitBacklog(relay, dest, topic, keys));
        figures.throughput[`${dest}/${batch}`] = MESSAGES / seconds;
        console.log(`  throughput ${dest}, batch ${batch}: ${(MESSAGES / seconds).toFixed(0)} messages/s`);
        await relay.stop();
      }
    }
  };

  // One key's backlog: KEY_MESSAGES of one ordering key committed at once, drained by a fresh
  // relay with the default options; the consumer must receive them in record order.
  const keyPart = async (run: number, figures: RunFigures) => {
    for (const [dest, topic] of [
      ['js', `${subject}.key`],
      ['hooks', 't'],
    ] as const) {
      const relay = engine(undefined);
      await relay.start();
      const keys = Array.from({ length: KEY_MESSAGES }, (_, i) => `key-${dest}-${run}-${i}`);
      const from = arrivals.length;
      const seconds = await drained(keys, await commitBacklog(relay, dest, topic, keys, `bench-key-${run}`));
      const inOrder = arrivals.slice(from).join('\n') === keys.join('\n');
      figures.key[dest] = { seconds, inOrder, relay: relay.outbox.relayCounters() };
      console.log(
        `  one key, ${KEY_MESSAGES} messages to ${dest}: ${seconds.toFixed(3)} s, ${inOrder ? 'in order' : 'OUT OF ORDER'}; relay ${JSON.stringify(relay.outbox.relayCounters())}`,
      );
      await relay.stop();
    }
  };

  const runs: RunFigures[] = [];
  for (let run = 0; run < RUNS; run++) {
    await pool.query('TRUNCATE baton.outbox, baton.jobs');
    arrived.clear();
    const figures: RunFigures = { throughput: {}, key: {} };
    if (PARTS.has('latency')) await latencyPart(run, figures);
    if (PARTS.has('throughput')) await throughputPart(run, figures);
    if (PARTS.has('key')) await keyPart(run, figures);
    runs.push(figures);
  }
  sub.unsubscribe();
  await jsm.streams.delete(stream).catch(() => undefined);
  await nc.close();
  receiver.closeAllConnections();
  receiver.close();
  await pool.end();

  const agg = (pick: (r: RunFigures) => number): Spread => spread(runs.map(pick));
  const p50 = (d: Distribution | undefined) => d?.p50 ?? Number.NaN;
  const p99 = (d: Distribution | undefined) => d?.p99 ?? Number.NaN;
  const report = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    loadAvgAtEnd: os.loadavg(),
    command: `npx tsx bench/outbox.ts ${process.argv.slice(2).join(' ')}`.trim(),
    machine,
    parts: [...PARTS],
    samplesPerRun: SAMPLES,
    messagesPerThroughputRun: MESSAGES,
    messagesPerKeyRun: KEY_MESSAGES,
    runs,
    latency: PARTS.has('latency')
      ? {
          jobStart: { p50: agg((r) => p50(r.job)), p99: agg((r) => p99(r.job)) },
          jobStartInTransaction: { p50: agg((r) => p50(r.jobTx)), p99: agg((r) => p99(r.jobTx)) },
          ratioWebhookToJobTx: agg((r) => p50(r.webhook) / p50(r.jobTx)),
          ratioNatsToJobTx: agg((r) => p50(r.nats) / p50(r.jobTx)),
          webhook: { p50: agg((r) => p50(r.webhook)), p99: agg((r) => p99(r.webhook)) },
          nats: { p50: agg((r) => p50(r.nats)), p99: agg((r) => p99(r.nats)) },
          ratioWebhookToJob: agg((r) => p50(r.webhook) / p50(r.job)),
          ratioNatsToJob: agg((r) => p50(r.nats) / p50(r.job)),
        }
      : null,
    throughput: Object.fromEntries(Object.keys(runs[0]?.throughput ?? {}).map((k) => [k, agg((r) => r.throughput[k]!)])),
    key: Object.fromEntries(
      Object.keys(runs[0]?.key ?? {}).map((k) => [
        k,
        { seconds: agg((r) => r.key[k]!.seconds), allInOrder: runs.every((r) => r.key[k]!.inOrder) },
      ]),
    ),
  };
  const f = (n: number) => (Number.isNaN(n) ? '-' : n.toFixed(n < 10 ? 2 : 0));
  const s = (x: Spread) => `${f(x.median)} [${f(x.min)}-${f(x.max)}]`;
  const lat = report.latency;
  const lines = [
    `# Outbox: ${[...PARTS].join(', ')}, ${report.startedAt}`,
    '',
    `Command: \`${report.command}\`. Machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.os}, Node ${machine.node}; load average at start ${machine.loadAvgAtStart.join(' / ')}, at end ${report.loadAvgAtEnd.map((x) => x.toFixed(2)).join(' / ')}. PostgreSQL: ${machine.postgres.source}. NATS ${args.nats}. Commit ${machine.gitCommit}${machine.gitDirty ? ' (dirty)' : ''}.`,
    '',
    ...(lat
      ? [
          `Latency: ${SAMPLES} samples per run, one at a time, ${GAP_MS} ms apart; medians over ${RUNS} runs, [min-max] in brackets. Job start: from enqueue's return (its commit) to the handler starting, in the same runs. Commit -> published: from COMMIT's return to the consumer receiving the message (webhook receiver on loopback; a core NATS subscriber on the stream's subject).`,
          '',
          '| path | p50 (ms) | p99 (ms) | p50 / job start p50 | p50 / job start in a transaction p50 |',
          '| --- | --- | --- | --- | --- |',
          `| job start, enqueue on its own (local wake) | ${s(lat.jobStart.p50)} | ${s(lat.jobStart.p99)} | 1 | - |`,
          `| job start, enqueue in a transaction (COMMIT -> handler, NOTIFY wake) | ${s(lat.jobStartInTransaction.p50)} | ${s(lat.jobStartInTransaction.p99)} | - | 1 |`,
          `| commit -> webhook received | ${s(lat.webhook.p50)} | ${s(lat.webhook.p99)} | ${s(lat.ratioWebhookToJob)} | ${s(lat.ratioWebhookToJobTx)} |`,
          `| commit -> NATS JetStream message received | ${s(lat.nats.p50)} | ${s(lat.nats.p99)} | ${s(lat.ratioNatsToJob)} | ${s(lat.ratioNatsToJobTx)} |`,
          '',
        ]
      : []),
    ...(PARTS.has('throughput')
      ? [
          `Throughput: ${MESSAGES} messages committed in one transaction, drained by one relay (claimed, published side by side, outcomes written per batch) until none is pending; messages/s, medians over ${RUNS} runs.`,
          '',
          '| destination / batch | messages/s |',
          '| --- | --- |',
          ...Object.entries(report.throughput).map(([k, v]) => `| ${k} | ${s(v)} |`),
          '',
        ]
      : []),
    ...(PARTS.has('key')
      ? [
          `One key: ${KEY_MESSAGES} messages of one ordering key committed in one transaction, drained by one relay with the default options (batch 100, poll 1 s) until none is pending; seconds from COMMIT's return, medians over ${RUNS} runs, [min-max] in brackets, and every run's figure. In order: the consumer received every message once, in record order, in every run.`,
          '',
          '| destination | seconds | messages/s (median) | runs (s) | in order |',
          '| --- | --- | --- | --- | --- |',
          ...Object.entries(report.key).map(
            ([k, v]) =>
              `| ${k === 'js' ? 'NATS JetStream' : 'webhook'} | ${s(v.seconds)} | ${f(KEY_MESSAGES / v.seconds.median)} | ${runs.map((r) => r.key[k]!.seconds.toFixed(3)).join(', ')} | ${v.allInOrder ? 'yes' : 'NO'} |`,
          ),
          '',
        ]
      : []),
  ];
  // To the second: runs started within one minute must not overwrite each other.
  const stamp = startedAt.toISOString().slice(0, 19).replace(/[:T]/g, '-');
  const dir = args.out ? path.resolve(args.out) : path.resolve(import.meta.dirname, '../results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `outbox-${stamp}.json`), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(path.join(dir, `outbox-${stamp}.md`), lines.join('\n'));
  console.log(lines.join('\n'));
} finally {
  await server.close();
}
