// The daemon's HTTP server bounds what one client can hold: a request whose body dribbles in
// gets 408 and its connection closed within the request timeout (plus Node's checking
// interval), and one address holds at most N connections: one more is answered 429 and closed
// before its request is read, so nothing it sent is done. Real sockets, the real app and database.

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer, type HttpLimits } from '../../src/daemon/http-server.ts';
import { createApp } from '../../src/http/app.ts';
import { createMetrics, type Metrics } from '../../src/http/metrics.ts';
import { type Baton, createBaton } from '../../src/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { waitFor, withTimeout } from '../helpers/wait.ts';

const db = useTestDatabase();
let baton: Baton;
let metrics: Metrics;
const servers: Server[] = [];

beforeAll(async () => {
  baton = createBaton({ connectionString: db.url, poolSize: 2, queues: {} });
  await baton.start();
  metrics = createMetrics(baton, { processMetrics: false });
});
afterAll(async () => {
  metrics?.close();
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
  await baton?.stop();
});

async function serve(limits: HttpLimits): Promise<number> {
  const server = createHttpServer(createApp(baton, { metrics }).fetch, limits);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A raw connection: what it received so far, whether it was closed, and when. */
function connect(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  const state = { data: '', closedAt: 0, socket };
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (state.data += d));
  socket.on('error', () => undefined);
  socket.on('close', () => (state.closedAt = Date.now()));
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { state, connected };
}

const jobs = async () => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM baton.jobs')).rows[0]!.n);
const head = (path: string, body: string, length = Buffer.byteLength(body)) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${body}`;

describe('the daemon HTTP server', () => {
  it('answers a request whose body dribbles in 408 and closes it within the timeout plus its check interval; nothing is enqueued', async () => {
    const timeoutMs = 400;
    const port = await serve({ requestTimeoutMs: timeoutMs, maxConnectionsPerAddress: 0 });
    const before = await jobs();
    const c = connect(port);
    await c.connected;
    const body = JSON.stringify({ jobType: 'slow', payload: { pad: 'x'.repeat(200) } });
    const sentAt = Date.now();
    c.state.socket.write(head('/api/jobs', '', Buffer.byteLength(body)));
    // One byte every 20 ms: the whole body would take about 5 s.
    let i = 0;
    const drip = setInterval(() => {
      if (i < body.length && !c.state.socket.destroyed) c.state.socket.write(body[i++]!);
    }, 20);
    try {
      await waitFor(() => c.state.closedAt > 0, { message: 'the slow connection closed by the server', timeoutMs: 5_000 });
    } finally {
      clearInterval(drip);
    }
    const elapsed = c.state.closedAt - sentAt;
    expect(c.state.data).toMatch(/^HTTP\/1\.1 408 /);
    // The bound: the timeout plus Node's checking interval (a quarter of it), plus scheduling slack.
    expect(elapsed).toBeGreaterThanOrEqual(timeoutMs);
    expect(elapsed).toBeLessThan(timeoutMs * 1.25 + 500);
    expect(i).toBeLessThan(body.length);
    expect(await jobs()).toBe(before);
    // The handler that was reading the body counts it as the client's (408), not as a server failure.
    await waitFor(
      async () => (await metrics.render()).includes('baton_http_requests_total{method="POST",route="/api/jobs",status="408"} 1'),
      {
        message: 'the cut request counted as 408',
      },
    );
    expect(await metrics.render()).not.toMatch(/baton_http_requests_total\{[^}]*status="5\d\d"/);
  });

  it('lets one address hold at most N connections: one more gets 429 TOO_MANY_CONNECTIONS, closed unread; a freed slot admits again', async () => {
    const port = await serve({ requestTimeoutMs: 10_000, maxConnectionsPerAddress: 2 });
    const held = [connect(port), connect(port)];
    await Promise.all(held.map((h) => h.connected));
    // Both work (and stay open, keep-alive).
    for (const h of held) h.state.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await waitFor(() => held.every((h) => h.state.data.startsWith('HTTP/1.1 200')), { message: 'the two held connections answered' });

    const before = await jobs();
    const extra = connect(port);
    await extra.connected;
    extra.state.socket.write(head('/api/jobs', JSON.stringify({ jobType: 'refused' })));
    await waitFor(() => extra.state.closedAt > 0, { message: 'the third connection closed by the server' });
    expect(extra.state.data).toMatch(/^HTTP\/1\.1 429 /);
    expect(extra.state.data).toMatch(/Retry-After: 1/);
    const json = JSON.parse(extra.state.data.slice(extra.state.data.indexOf('\r\n\r\n') + 4)) as { error: { code: string } };
    expect(json.error.code).toBe('TOO_MANY_CONNECTIONS');
    // Its request was never read, let alone done.
    expect(await jobs()).toBe(before);
    // The held connections are unaffected.
    expect(held.every((h) => h.state.closedAt === 0)).toBe(true);

    // Closing one frees a slot (once the server has seen the close).
    held[0]!.state.socket.destroy();
    await waitFor(
      async () => {
        const again = connect(port);
        await again.connected;
        again.state.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
        await withTimeout(
          new Promise<void>((resolve) => again.state.socket.once('close', () => resolve())),
          5_000,
          'a new connection answered and closed',
        );
        return again.state.data.startsWith('HTTP/1.1 200');
      },
      { message: 'a new connection admitted after one of the two closed' },
    );
    held[1]!.state.socket.destroy();
  });

  it('with the cap at 0, an address may hold any number of connections', async () => {
    const port = await serve({ requestTimeoutMs: 10_000, maxConnectionsPerAddress: 0 });
    const many = Array.from({ length: 6 }, () => connect(port));
    await Promise.all(many.map((m) => m.connected));
    for (const m of many) m.state.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await waitFor(() => many.every((m) => m.state.data.startsWith('HTTP/1.1 200')), { message: 'six connections answered' });
    for (const m of many) m.state.socket.destroy();
  });
});
