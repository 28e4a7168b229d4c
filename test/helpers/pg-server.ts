// Picks the PostgreSQL server a test run uses: DATABASE_URL, else a Docker
// container (testcontainers), else a throwaway embedded cluster (the daemon's wrapper).
// Whatever it starts, stop() tears down; a server it did not start is left alone.

import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { startEmbeddedPostgres } from '../../src/daemon/embedded-pg.ts';

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

/**
 * A throwaway cluster of the daemon's own wrapper on a free port, removed by stop().
 * Durable like a production server (no settings given): tests assert on commit behaviour.
 */
async function startEmbeddedPg(): Promise<PgServer> {
  const server = await startEmbeddedPostgres();
  return {
    kind: 'embedded',
    adminUrl: server.connectionString,
    description: `embedded PostgreSQL on 127.0.0.1:${server.port} (${server.dataDir})`,
    stop: () => server.stop(),
  };
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
