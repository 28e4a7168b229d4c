// The outbox chaos scenario: producers commit (or roll back) business rows with outbox
// messages to a webhook and to NATS JetStream while two relay processes are killed with
// kill -9 mid-publish and restarted, the NATS connection is reset through a fault proxy, and
// the webhook receiver answers 503, hangs before accepting, or accepts and never answers.
// Then the relays drain, and outbox-checker.ts judges from what the consumers recorded.

import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, nanos } from '@nats-io/transport-node';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { createBaton } from '../../src/index.ts';
import { NATS_URL } from '../helpers/brokers.ts';
import { startPgCluster } from '../helpers/pg-cluster.ts';
import { FaultProxy, prng } from './fault-proxy.ts';
import { checkOutboxChaos, type Delivery } from './outbox-checker.ts';

const RELAY_TS = fileURLToPath(new URL('./outbox-relay.ts', import.meta.url));
const SECRET = 'whsec_b3V0Ym94LWNoYW9zLXNlY3JldC0wMTIzNDU2Nzg=';
const FAULT_MS = 20_000;
const DRAIN_DEADLINE_MS = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface OutboxRunResult {
  ok: boolean;
  violations: string[];
}

export async function runOutboxScenario(o: { seed: number }): Promise<OutboxRunResult> {
  const rand = prng(o.seed);
  console.log(`\n=== chaos outbox: seed ${o.seed}, ${FAULT_MS / 1000} s of relay kills, NATS resets, webhook 503s and hangs`);
  const cluster = await startPgCluster();
  const admin = new pg.Pool({ connectionString: cluster.url(), max: 4 });
  admin.on('error', () => undefined);
  const nats = new URL(NATS_URL);
  const natsProxy = new FaultProxy({ targetHost: nats.hostname, targetPort: Number(nats.port), seed: o.seed });
  await natsProxy.listen();
  const nc = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(nc);
  const subject = `baton_chaos_${process.pid}_${o.seed}`;
  const stream = `BATON_CHAOS_${process.pid}_${o.seed}`;
  await jsm.streams.add({ name: stream, subjects: [`${subject}.>`], duplicate_window: nanos(300_000) });

  // The receiver: records what it accepted; faults only while `faulty`.
  let faulty = true;
  const deliveries: Delivery[] = [];
  const hungResponses: http.ServerResponse[] = [];
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const key = String(req.headers['baton-message-key']);
      const r = faulty ? rand() : 1;
      if (r < 0.1) {
        res.writeHead(503).end();
      } else if (r < 0.15) {
        hungResponses.push(res); // hangs before accepting: not a delivery
      } else if (r < 0.2) {
        deliveries.push({ key, at: Date.now(), hung: true });
        hungResponses.push(res); // accepted, never answered: the relay retries
      } else {
        deliveries.push({ key, at: Date.now(), hung: false });
        res.writeHead(204).end();
      }
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const relays: Array<{ child: ChildProcess | null; killed: boolean }> = [
    { child: null, killed: false },
    { child: null, killed: false },
  ];
  const crashes: string[] = [];
  const spawnRelay = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', RELAY_TS], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        env: {
          ...process.env,
          CHAOS_DB_URL: cluster.url(),
          CHAOS_HOOK_URL: hookUrl,
          CHAOS_HOOK_SECRET: SECRET,
          CHAOS_NATS_URL: `nats://127.0.0.1:${natsProxy.port}`,
        },
      });
      const slot = relays[i]!;
      slot.child = child;
      slot.killed = false;
      const timer = setTimeout(() => reject(new Error(`relay ${i} not ready in 60 s`)), 60_000);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        resolve();
        // A child the slot no longer holds was killed and replaced (its exit may come after the
        // replacement started, on a busy machine): only the current child's exit can be a crash.
        if (slot.child === child && !slot.killed) crashes.push(`relay ${i} exited on its own (${code ?? signal})`);
      });
      child.on('message', (m: { type?: string }) => {
        if (m?.type === 'ready') {
          clearTimeout(timer);
          resolve();
        }
      });
    });

  const violations: string[] = [];
  const kills: number[] = [];
  const producer = createBaton({ connectionString: cluster.url(), poolSize: 4 });
  try {
    await migrate(admin, { schema: 'baton' });
    await admin.query('CREATE TABLE public.orders (id integer PRIMARY KEY, committed boolean NOT NULL)');
    await Promise.all([spawnRelay(0), spawnRelay(1)]);

    const rolledBack = new Set<string>();
    let orders = 0;
    const t0 = Date.now();
    const produce = async () => {
      const client = await admin.connect();
      try {
        while (Date.now() - t0 < FAULT_MS) {
          const id = ++orders;
          const commit = rand() >= 0.2;
          const orderingKey = id % 3 === 0 ? `customer-${id % 7}` : undefined;
          const keys = [`o${id}:hook`, `o${id}:js`];
          await client.query('BEGIN');
          await client.query('INSERT INTO public.orders VALUES ($1, true)', [id]);
          await producer.outbox.recordMany(
            [
              {
                destination: 'hooks',
                topic: 'order.placed',
                payload: { id },
                messageKey: keys[0]!,
                ...(orderingKey ? { orderingKey } : {}),
              },
              { destination: 'js', topic: `${subject}.order`, payload: { id }, messageKey: keys[1]! },
            ],
            { client },
          );
          await client.query(commit ? 'COMMIT' : 'ROLLBACK');
          if (!commit) for (const k of keys) rolledBack.add(k);
          await sleep(20 + rand() * 40);
        }
      } finally {
        client.release();
      }
    };
    const faults = async () => {
      let n = 0;
      while (Date.now() - t0 < FAULT_MS) {
        await sleep(1_000 + rand() * 1_500);
        if (Date.now() - t0 >= FAULT_MS) break;
        n++;
        if (n % 3 === 0 || relays.every((r) => r.killed)) {
          natsProxy.resetAll();
          console.log(`    t=${((Date.now() - t0) / 1000).toFixed(1)}s reset the NATS connections`);
        } else {
          const i = rand() < 0.5 ? 0 : 1;
          const slot = relays[i]!;
          slot.killed = true;
          kills.push(Date.now());
          slot.child?.kill('SIGKILL');
          console.log(`    t=${((Date.now() - t0) / 1000).toFixed(1)}s kill -9 relay ${i}`);
          await sleep(300);
          // Started in the background (tsx takes seconds on a busy machine): the faults go on meanwhile.
          void spawnRelay(i).catch((err: unknown) => crashes.push(String(err)));
        }
      }
    };
    await Promise.all([produce(), produce(), faults()]);
    faulty = false;
    for (const r of hungResponses.splice(0)) r.destroy();

    const deadline = Date.now() + DRAIN_DEADLINE_MS;
    let unpublished = Number.POSITIVE_INFINITY;
    while (Date.now() < deadline) {
      unpublished = (await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM baton.outbox WHERE state <> 'published'`)).rows[0]!.n;
      if (unpublished === 0) break;
      await sleep(200);
    }
    const committedRows = await admin.query<{ message_key: string; ordering_key: string | null; id: string; destination: string }>(
      // ORDER BY o.id: the numeric id, not the text column of the same name ('1025' < '983').
      'SELECT message_key, ordering_key, o.id::text AS id, destination FROM baton.outbox o ORDER BY o.id',
    );
    const committedOrders = new Set((await admin.query<{ id: number }>('SELECT id FROM public.orders')).rows.map((r) => r.id));
    // Ground truth: the outbox rows are exactly the committed orders' messages.
    for (const r of committedRows.rows) {
      const order = Number(/^o(\d+):/.exec(r.message_key)?.[1]);
      if (!committedOrders.has(order)) violations.push(`outbox row ${r.message_key} without its committed order`);
    }
    if (committedRows.rows.length !== committedOrders.size * 2) {
      violations.push(`outbox rows ${committedRows.rows.length} != 2 x committed orders ${committedOrders.size}`);
    }
    const info = await jsm.streams.info(stream);
    const streamIds: string[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq });
      streamIds.push(m?.header.get('Nats-Msg-Id') ?? '');
    }
    const check = checkOutboxChaos({
      committedHooks: committedRows.rows
        .filter((r) => r.destination === 'hooks')
        .map((r) => ({ key: r.message_key, orderingKey: r.ordering_key, id: BigInt(r.id) })),
      committedJs: committedRows.rows.filter((r) => r.destination === 'js').map((r) => r.message_key),
      rolledBack,
      deliveries,
      streamIds,
      kills,
      killSlackMs: 2_000,
      claimWindowMs: 3_000,
      unpublished,
    });
    violations.push(...check.violations, ...crashes);
    if (kills.length === 0) violations.push('vacuous: no relay was killed');
    if (check.duplicates.total === 0) violations.push('vacuous: no duplicate delivery, so no fault bit');
    console.log(
      `    orders ${orders} (${committedOrders.size} committed, ${orders - committedOrders.size} rolled back); webhook deliveries ${deliveries.length} for ${committedOrders.size} messages; stream ${streamIds.length}`,
    );
    console.log(
      `    duplicates: ${check.duplicates.total} (${check.duplicates.byHang} after a receiver hang, ${check.duplicates.byKill} around a relay kill); kills ${kills.length}; NATS resets ${natsProxy.stats().resets}`,
    );
    for (const v of violations.slice(0, 20)) console.log(`    VIOLATION ${v}`);
    console.log(violations.length === 0 ? '    outbox: VALID' : `    outbox: INVALID (${violations.length})`);
    return { ok: violations.length === 0, violations };
  } finally {
    for (const r of relays) {
      r.killed = true;
      r.child?.kill('SIGKILL');
    }
    await producer.stop().catch(() => undefined);
    for (const r of hungResponses) r.destroy();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
    await jsm.streams.delete(stream).catch(() => undefined);
    await nc.close();
    await natsProxy.close();
    await admin.end().catch(() => undefined);
    await cluster.destroy();
  }
}

// `tsx test/chaos/outbox.ts` runs the scenario alone.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = await runOutboxScenario({ seed: Number(process.argv[2] ?? 1) });
  process.exit(r.ok ? 0 : 1);
}
