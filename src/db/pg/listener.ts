// The one LISTEN connection per process. Once started it reconnects forever (with
// backoff), proves the connection alive with a timed check, and reports every
// connection so the engine can poll at once (notifications sent meanwhile are gone).
// A start() that fails leaves nothing behind: no connection, no timer, no retry.

import type pg from 'pg';
import type { NotificationListener } from '../../driver/executor.ts';
import { endClient } from './end-client.ts';
import { translatePgError } from './errors.ts';
import { newClient } from './multi-host.ts';

export interface PgListenerOptions {
  connection: pg.ClientConfig;
  onNotify: (channel: string, payload: string) => void;
  /** Called after every connection; after a reconnect, once LISTEN is in place again. */
  onConnected: () => void;
  onError?: (err: unknown) => void;
  /** How often to prove the connection alive with a trivial query. */
  checkMs?: number;
}

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 2_000;

export class PgListener implements NotificationListener {
  readonly #o: PgListenerOptions;
  #channels: string[] = [];
  #client: pg.Client | null = null;
  #stopped = true;
  #check: NodeJS.Timeout | null = null;
  #retry: NodeJS.Timeout | null = null;
  #attempt = 0;

  constructor(options: PgListenerOptions) {
    this.#o = options;
  }

  async start(channels: string[]): Promise<void> {
    this.#channels = [...channels];
    this.#stopped = false;
    try {
      await this.#open();
    } catch (err) {
      this.#stopped = true;
      throw translatePgError(err);
    }
    this.#o.onConnected();
  }

  /** Connects and LISTENs; the client becomes current only when both succeeded. */
  async #open(): Promise<void> {
    const checkMs = this.#o.checkMs ?? 2_000;
    const client = newClient({
      ...this.#o.connection,
      keepAlive: true,
      application_name: 'baton-listener',
      // A check (or LISTEN) on a silently dead socket would otherwise wait for TCP to give up,
      // many minutes; timing it out inside its period makes us reconnect instead.
      query_timeout: Math.max(100, Math.floor(checkMs * 0.75)),
    });
    client.on('notification', (n) => {
      if (this.#client === client) this.#o.onNotify(n.channel, n.payload ?? '');
    });
    client.on('error', (err) => this.#lost(client, err));
    client.on('end', () => this.#lost(client, new Error('listener connection ended')));
    try {
      await client.connect();
      if (this.#channels.length > 0) {
        await client.query(this.#channels.map((c) => `LISTEN ${client.escapeIdentifier(c)}`).join('; '));
      }
    } catch (err) {
      void endClient(client);
      throw err;
    }
    if (this.#stopped) {
      // stop() ran while we connected.
      void endClient(client);
      return;
    }
    this.#client = client;
    this.#attempt = 0;
    this.#check = setInterval(() => {
      client.query('SELECT 1').catch((err: unknown) => this.#lost(client, err));
    }, checkMs);
  }

  #lost(client: pg.Client, err: unknown): void {
    if (this.#client !== client || this.#stopped) return;
    this.#client = null;
    if (this.#check) clearInterval(this.#check);
    this.#check = null;
    void endClient(client);
    this.#o.onError?.(err);
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#stopped || this.#retry) return;
    const delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** this.#attempt++);
    this.#retry = setTimeout(() => {
      this.#retry = null;
      this.#open().then(
        () => {
          if (this.#client) this.#o.onConnected();
        },
        (err: unknown) => {
          this.#o.onError?.(translatePgError(err));
          this.#scheduleReconnect();
        },
      );
    }, delay);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retry) clearTimeout(this.#retry);
    if (this.#check) clearInterval(this.#check);
    this.#retry = null;
    this.#check = null;
    const client = this.#client;
    this.#client = null;
    if (client) await endClient(client);
  }
}
