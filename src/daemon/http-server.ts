// The daemon's HTTP server: Node's, with the two bounds a client must not be able to lift.
// A request (headers and body) must arrive within requestTimeoutMs, or it gets 408 and its
// connection is closed; and one client address holds at most maxConnectionsPerAddress
// connections at once: one more is answered 429 and closed before any of its bytes is read.

import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { STATUS_BY_CODE } from '../http/errors.ts';

export const REQUEST_TIMEOUT_MS_DEFAULT = 30_000;
export const MAX_CONNECTIONS_PER_ADDRESS_DEFAULT = 128;

export interface HttpLimits {
  /** Longest time to receive one request, headers and body; then 408 and the connection closes. */
  requestTimeoutMs: number;
  /** Most connections one client address may hold open at once; 0 means no cap. */
  maxConnectionsPerAddress: number;
}

/** How a refused connection is answered: the API's error body, then the connection closes. */
function refusal(max: number): string {
  const status = STATUS_BY_CODE.TOO_MANY_CONNECTIONS;
  const body = JSON.stringify({
    error: { code: 'TOO_MANY_CONNECTIONS', message: `this client address already holds ${max} connections; reuse or close one` },
  });
  return (
    `HTTP/1.1 ${status} Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `Retry-After: 1\r\nConnection: close\r\n\r\n${body}`
  );
}

/** A refused socket is closed after this long even if its peer never reads the answer. */
const REFUSAL_LINGER_MS = 1_000;

/**
 * Node's HTTP server for `fetch` with `limits` applied. Node checks request deadlines on a
 * timer (connectionsCheckingInterval), so a slow request is cut within the timeout plus a
 * quarter of it (at most a second more). Node's server takes a connection in its own
 * 'connection' listeners; they run only for connections admitted here, so not one byte of a
 * refused connection is parsed, let alone handled. `onRefused` is told of each refusal.
 */
export function createHttpServer(
  fetch: (request: Request) => Response | Promise<Response>,
  limits: HttpLimits,
  onRefused: (address: string) => void = () => undefined,
): Server {
  const server = createAdaptorServer({
    fetch,
    serverOptions: {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(limits.requestTimeoutMs / 4))),
    },
  }) as Server;
  const max = limits.maxConnectionsPerAddress;
  if (max === 0) return server;
  const node = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address === undefined) {
      // Already gone: nothing to answer.
      socket.destroy();
      return;
    }
    const n = open.get(address) ?? 0;
    if (n >= max) {
      onRefused(address);
      socket.setTimeout(REFUSAL_LINGER_MS, () => socket.destroy());
      socket.on('error', () => socket.destroy());
      socket.end(refusal(max), () => socket.destroy());
      return;
    }
    open.set(address, n + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
    for (const l of node) l.call(server, socket);
  });
  return server;
}
