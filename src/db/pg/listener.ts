// The one LISTEN connection per process, on pg-listen: reconnects forever,
// checks the connection periodically (a dead socket is noticed), and reports
// reconnects so the engine can poll at once (notifications sent meanwhile are gone).

import type pg from 'pg';
import pgListen, { type Subscriber } from 'pg-listen';
import type { NotificationListener } from '../executor.ts';
import { translatePgError } from './errors.ts';

export interface PgListenerOptions {
  connection: pg.ClientConfig;
  onNotify: (channel: string) => void;
  /** Called after every connection; after a reconnect, once LISTEN is in place again. */
  onConnected: () => void;
  onError?: (err: unknown) => void;
  /** How often to prove the connection alive with a trivial query. */
  paranoidCheckMs?: number;
}

// pg-listen is CommonJS with an `exports.default`; under Node's ESM interop the default
// import is the module object, so reach through it when needed.
type CreateSubscriber = typeof import('pg-listen').default;
const createSubscriber: CreateSubscriber =
  (pgListen as unknown as { default?: CreateSubscriber }).default ?? (pgListen as unknown as CreateSubscriber);

export class PgListener implements NotificationListener {
  readonly #o: PgListenerOptions;
  #sub: Subscriber | null = null;

  constructor(options: PgListenerOptions) {
    this.#o = options;
  }

  async start(channels: string[]): Promise<void> {
    const checkMs = this.#o.paranoidCheckMs ?? 2_000;
    const sub = createSubscriber(
      {
        ...this.#o.connection,
        keepAlive: true,
        application_name: 'baton-listener',
        // pg-listen sends a check every period without waiting for the previous one. On a
        // silently dead socket (blackhole) they would pile up behind the first (pg warns
        // "client.query() when the client is already executing a query") and the dead
        // LISTEN would go unnoticed until TCP gives up, many minutes later. Timing the check
        // out inside its period makes pg-listen reconnect instead.
        query_timeout: Math.max(100, Math.floor(checkMs * 0.75)),
      },
      {
        paranoidChecking: checkMs,
        retryInterval: (attempt: number) => Math.min(2_000, 100 * 2 ** attempt),
        retryLimit: Infinity,
        retryTimeout: 0, // never give up
        parse: (s: string) => s,
      },
    );
    sub.events.on('notification', (n) => this.#o.onNotify(n.channel));
    sub.events.on('connected', () => this.#o.onConnected());
    sub.events.on('error', (err) => this.#o.onError?.(err));
    this.#sub = sub;
    try {
      await sub.connect();
      await Promise.all(channels.map((c) => sub.listenTo(c)));
    } catch (err) {
      await sub.close().catch(() => undefined);
      throw translatePgError(err);
    }
  }

  async stop(): Promise<void> {
    const sub = this.#sub;
    this.#sub = null;
    if (sub) await sub.close().catch(() => undefined);
  }
}
