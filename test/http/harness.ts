// Test harness for the HTTP edge: a real Baton on the file's database, the app
// served by @hono/node-server on an ephemeral port, and the typed client users get.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import type { ClientResponse, parseResponse } from 'hono/client';
import { afterAll, beforeAll, expect } from 'vitest';
import { type BatonClient, createClient } from '../../src/client/index.ts';
import { type ClosableApiKeys, openApiKeys } from '../../src/create-api-keys.ts';
import type { ListenAddress } from '../../src/http/allowed-hosts.ts';
import { type AppOptions, createApp } from '../../src/http/app.ts';
import { createMetrics, type Metrics } from '../../src/http/metrics.ts';
import { createStatsHistory } from '../../src/http/stats-history.ts';
import { type Baton, type BatonOptions, createBaton } from '../../src/index.ts';
import type { TestDatabase } from '../helpers/db.ts';
import { JSON_HEADERS } from '../helpers/http.ts';

export { errorCode, JSON_HEADERS } from '../helpers/http.ts';

export interface ApiHarness {
  baton: Baton;
  metrics: Metrics;
  url: string;
  client: BatonClient;
  /** A plain fetch against the server, for requests the typed client cannot express. */
  raw(path: string, init?: RequestInit): Promise<Response>;
  /** The key store the app checks, when the harness was started withApiKeys. */
  apiKeys: ClosableApiKeys | undefined;
  /** Marks the engine as started for /readyz. */
  setStarted(started: boolean): void;
  close(): Promise<void>;
}

export interface HarnessOptions {
  app?: Omit<AppOptions, 'metrics' | 'isStarted'>;
  baton?: Partial<BatonOptions>;
  /** Token the typed client sends. */
  clientToken?: string;
  /** Opens a key store on the database for the app (closed with the harness). */
  withApiKeys?: boolean;
}

export async function startApi(db: TestDatabase, opts: HarnessOptions = {}): Promise<ApiHarness> {
  const baton = createBaton({ connectionString: db.url, poolSize: 4, ...opts.baton });
  await baton.start();
  let started = true;
  const metrics = createMetrics(baton, { processMetrics: false });
  let listening: ListenAddress | undefined;
  // Told where it listens like the daemon's app is; a test may override it.
  const statsHistory = createStatsHistory(baton, { intervalMs: 250 });
  const apiKeys = opts.withApiKeys ? openApiKeys({ pool: db.pool, schema: db.schema }) : undefined;
  const app = createApp(baton, {
    listenOn: () => listening,
    ...(apiKeys ? { apiKeys } : {}),
    ...opts.app,
    metrics,
    statsHistory,
    isStarted: () => started,
  });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  // Longer than fetch's own idle timeout (4 s), so the client always drops an idle connection
  // first: with Node's default (5 s) a slow test could reuse a socket the server is just
  // closing, and fail with ECONNRESET.
  (server as http.Server).keepAliveTimeout = 60_000;
  const { port } = server.address() as AddressInfo;
  listening = { host: '127.0.0.1', port };
  const url = `http://127.0.0.1:${port}`;
  return {
    baton,
    metrics,
    url,
    client: createClient(url, opts.clientToken === undefined ? {} : { token: opts.clientToken }),
    raw: (path, init) => fetch(`${url}${path}`, init),
    apiKeys,
    setStarted: (s) => {
      started = s;
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      metrics.close();
      statsHistory.close();
      await apiKeys?.close();
      await baton.stop({ drainMs: 1_000 });
    },
  };
}

/**
 * Registers a file's harness: started on `db` before the file's tests, closed after them. The
 * object it returns forwards to that harness, so read it inside hooks and tests only.
 */
export function useApi(db: TestDatabase, opts: HarnessOptions = {}): ApiHarness {
  let h: ApiHarness | undefined;
  beforeAll(async () => {
    h = await startApi(db, opts);
  });
  afterAll(async () => {
    await h?.close();
  });
  const started = (): ApiHarness => {
    if (!h) throw new Error('useApi: the harness exists inside hooks and tests only');
    return h;
  };
  return {
    get baton() {
      return started().baton;
    },
    get metrics() {
      return started().metrics;
    },
    get url() {
      return started().url;
    },
    get client() {
      return started().client;
    },
    get apiKeys() {
      return started().apiKeys;
    },
    raw: (path, init) => started().raw(path, init),
    setStarted: (s) => started().setStarted(s),
    close: () => started().close(),
  };
}

/** Counts rows of the jobs table, optionally filtered by a SQL condition on literal test data. */
export async function countJobs(db: TestDatabase, where = 'true', params: unknown[] = []): Promise<number> {
  const r = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${db.schema}.jobs WHERE ${where}`, params);
  return Number(r.rows[0]!.n);
}

/** What a typed client's answer carries on success: the union of its 2xx bodies. */
export type OkBody<R extends ClientResponse<any, any, any>> = Awaited<ReturnType<typeof parseResponse<R>>>;

/**
 * The body of a typed client's answer, typed as its success bodies (the routes' error statuses
 * are in their types, so reading `.json()` unchecked gives a union with the error body). Fails
 * the test, with the body, unless the status is `status` (any 2xx when absent).
 */
export async function okJson<R extends ClientResponse<any, any, any>>(res: R | Promise<R>, status?: number): Promise<OkBody<R>> {
  const r = await res;
  if (status === undefined ? !r.ok : r.status !== status) {
    expect.fail(`expected ${status ?? 'a 2xx'}, got ${r.status}: ${(await r.text()).slice(0, 500)}`);
  }
  return (await r.json()) as OkBody<R>;
}

/** A request to the server at `url` with any Host header (fetch always sends the URL's own). */
export function requestWithHost(
  url: string,
  host: string,
  path: string,
  method = 'GET',
  headers: Record<string, string> = {},
): Promise<Response> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, path, method, headers: { ...headers, host } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += String(d)));
      res.on('end', () => resolve(new Response(text, { status: res.statusCode!, headers: res.headers as Record<string, string> })));
    });
    req.on('error', reject);
    req.end();
  });
}

const STACK = /\bat .+:\d+:\d+|node_modules|\.ts:\d+/;

/** The first field an INVALID_ARGUMENT error names. */
export const field = (body: { error: { details?: any } }): unknown => body.error.details?.issues?.[0]?.path ?? body.error.details?.path;

/** Assertions shared by the bad-input files; `api` is read lazily (it exists after beforeAll). */
export function badInputHelpers(db: TestDatabase, api: () => ApiHarness) {
  /** Asserts the error shape, status and code; returns the body for more checks. */
  async function expectError(res: Response, status: number, code: string) {
    const text = await res.text();
    expect(res.status, text).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(text).not.toMatch(STACK);
    const body = JSON.parse(text) as { error: { code: string; message: string; details?: any } };
    expect(body.error.code, text).toBe(code);
    expect(typeof body.error.message).toBe('string');
    return body;
  }

  /** Sends `body` to POST /api/jobs and checks it is rejected and nothing is written. */
  async function rejectsEnqueue(body: RequestInit['body'], status: number, code: string, headers: Record<string, string> = JSON_HEADERS) {
    const before = await countJobs(db);
    const res = await api().raw('/api/jobs', { method: 'POST', headers, body });
    const parsed = await expectError(res, status, code);
    expect(await countJobs(db)).toBe(before);
    return parsed;
  }

  return { expectError, rejectsEnqueue };
}
