// `npx tsx bench/auth.ts [--server cluster|embedded|<postgres url>] [--runs N] [--requests N]`:
// what authentication costs a request. The app in process on a real database, one job, and
// N sequential GET /api/jobs/:id over one keep-alive connection per mode: open (no
// credential), the admin token, an admin key, a tenant key (cached, the hot path), and a
// tenant key with the key cache off (every request reads api_keys: what the cache saves).
// Modes run interleaved, RUNS rounds; per mode the median of the rounds' p50 and p99, and
// the ratio of each mode's p50 to open's in the same round. Writes results/auth-<time>.md/.json.

import { mkdir, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type ServerType, serve } from '@hono/node-server';
import pg from 'pg';
import { migrate } from '../src/db/migrate.ts';
import { type AppOptions, createApp } from '../src/http/app.ts';
import { type ApiKeys, type Baton, createBaton, openApiKeys } from '../src/index.ts';
import { machineRecord } from './machine.ts';
import { openServer, type ServerChoice } from './server.ts';
import { type Distribution, distribution, spread } from './stats.ts';

const { values: args } = parseArgs({
  options: {
    server: { type: 'string', default: 'cluster' },
    runs: { type: 'string', default: '5' },
    requests: { type: 'string', default: '2000' },
  },
});
const choice: ServerChoice = args.server === 'cluster' || args.server === 'embedded' ? args.server : { url: args.server as string };
const RUNS = Number(args.runs);
const REQUESTS = Number(args.requests);
const TOKEN = 'bench-admin-token-0123456789';

interface Mode {
  id: string;
  title: string;
  app: (keys: { cached: ApiKeys; uncached: ApiKeys }) => Partial<AppOptions>;
  credential: (c: { adminKey: string; tenantKey: string }) => string | undefined;
}
const MODES: Mode[] = [
  { id: 'open', title: 'open (no credential configured, loopback)', app: () => ({}), credential: () => undefined },
  { id: 'token', title: 'admin token (BATON_API_TOKEN)', app: (k) => ({ apiToken: TOKEN, apiKeys: k.cached }), credential: () => TOKEN },
  { id: 'admin-key', title: 'admin key, cached', app: (k) => ({ apiKeys: k.cached }), credential: (c) => c.adminKey },
  { id: 'tenant-key', title: 'tenant key, cached', app: (k) => ({ apiKeys: k.cached }), credential: (c) => c.tenantKey },
  { id: 'tenant-uncached', title: 'tenant key, key cache off', app: (k) => ({ apiKeys: k.uncached }), credential: (c) => c.tenantKey },
];

async function listen(baton: Baton, opts: Partial<AppOptions>): Promise<{ url: string; server: ServerType }> {
  const app = createApp(baton, { metrics: false, ...opts });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function measure(url: string, credential: string | undefined, jobId: string): Promise<Distribution> {
  const headers: Record<string, string> = credential ? { authorization: `Bearer ${credential}` } : {};
  const samples: number[] = [];
  // Warm-up: connection, the key cache, prepared statements.
  for (let i = 0; i < 50; i++) await (await fetch(`${url}/api/jobs/${jobId}`, { headers })).arrayBuffer();
  for (let i = 0; i < REQUESTS; i++) {
    const t = performance.now();
    const res = await fetch(`${url}/api/jobs/${jobId}`, { headers });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET /api/jobs/${jobId} answered ${res.status}`);
    samples.push(performance.now() - t);
  }
  return distribution(samples);
}

const startedAt = new Date();
const server = await openServer(choice);
const dbName = `baton_bench_auth_${process.pid}`;
try {
  const machine = await machineRecord(server);
  const url = await server.createDatabase(dbName);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  await migrate(pool, { schema: 'baton' });
  const baton = createBaton({ pool, queues: {} });
  const job = (await baton.enqueue({ jobType: 'x', tenantId: 'acme', payload: { n: 1 } })).job;
  const cached = openApiKeys({ pool, schema: 'baton' });
  const uncached = openApiKeys({ pool, schema: 'baton', cacheMs: 0 });
  const creds = { adminKey: (await cached.create({ role: 'admin' })).token, tenantKey: (await cached.create({ tenantId: 'acme' })).token };
  const rounds: Record<string, Distribution[]> = {};
  const ratios: Record<string, number[]> = {};
  for (let run = 0; run < RUNS; run++) {
    const p50s: Record<string, number> = {};
    for (const mode of MODES) {
      const s = await listen(baton, mode.app({ cached, uncached }));
      try {
        const d = await measure(s.url, mode.credential(creds), job.id);
        rounds[mode.id] = [...(rounds[mode.id] ?? []), d];
        p50s[mode.id] = d.p50;
        console.log(`run ${run + 1}/${RUNS} ${mode.id}: p50 ${d.p50.toFixed(3)} ms, p99 ${d.p99.toFixed(3)} ms`);
      } finally {
        await new Promise<void>((r) => s.server.close(() => r()));
      }
    }
    for (const mode of MODES) ratios[mode.id] = [...(ratios[mode.id] ?? []), p50s[mode.id]! / p50s.open!];
  }
  await baton.stop();
  await pool.end();
  const modes = Object.fromEntries(
    MODES.map((m) => [
      m.id,
      {
        title: m.title,
        p50Ms: spread(rounds[m.id]!.map((d) => d.p50)),
        p99Ms: spread(rounds[m.id]!.map((d) => d.p99)),
        p50VsOpen: spread(ratios[m.id]!),
      },
    ]),
  );
  const report = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    loadAvgAtEnd: os.loadavg(),
    command: `npx tsx bench/auth.ts ${process.argv.slice(2).join(' ')}`.trim(),
    requestsPerRound: REQUESTS,
    rounds: RUNS,
    machine,
    modes,
  };
  const f = (n: number) => n.toFixed(3);
  const md = [
    '# Authentication cost per request',
    '',
    `Command: \`${report.command}\`. ${RUNS} rounds, modes interleaved; each round ${REQUESTS} sequential`,
    '`GET /api/jobs/:id` over one keep-alive connection, app in process, real PostgreSQL.',
    `Machine: ${machine.cpuModel}, ${machine.cores} cores, Node ${machine.node}, ${machine.postgres.version.split(' ').slice(0, 2).join(' ')};`,
    `commit ${machine.gitCommit}${machine.gitDirty ? ' (dirty)' : ''}. Load average at start ${machine.loadAvgAtStart.map((l) => l.toFixed(2)).join(' / ')},`,
    `at end ${report.loadAvgAtEnd.map((l) => l.toFixed(2)).join(' / ')} (a shared, noisy machine).`,
    '',
    '| mode | p50 ms (median of rounds) | p99 ms (median of rounds) | p50 / open (same round, median [min, max]) |',
    '| --- | --- | --- | --- |',
    ...MODES.map((m) => {
      const r = modes[m.id]!;
      return `| ${m.title} | ${f(r.p50Ms.median)} | ${f(r.p99Ms.median)} | ${r.p50VsOpen.median.toFixed(2)} [${r.p50VsOpen.min.toFixed(2)}, ${r.p50VsOpen.max.toFixed(2)}] |`;
    }),
    '',
  ].join('\n');
  const stamp = startedAt.toISOString().slice(0, 16).replace(/[T:]/g, '-');
  const dir = path.join(import.meta.dirname, '..', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, `auth-${stamp}.json`), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(path.join(dir, `auth-${stamp}.md`), md);
  console.log(md);
  await cached.close();
  await uncached.close();
} finally {
  await server.dropDatabase(dbName).catch(() => undefined);
  await server.close();
}
