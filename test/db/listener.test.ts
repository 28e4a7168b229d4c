// The LISTEN connection on its own, against the file's database directly and through a
// fault proxy: notifications arrive; a terminated or silently dead connection is replaced
// and reported; a start() that cannot reach the server fails within its connect timeout
// instead of hanging; stop() returns even when the socket no longer answers.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PgListener } from '../../src/db/pg/listener.ts';
import { FaultProxy } from '../chaos/fault-proxy.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { Signal, waitFor, withTimeout } from '../helpers/wait.ts';

const db = useTestDatabase();

describe('PgListener', () => {
  let proxy: FaultProxy;
  let proxiedUrl: string;
  const started: PgListener[] = [];
  beforeEach(async () => {
    const target = new URL(db.url);
    proxy = new FaultProxy({ targetHost: target.hostname, targetPort: Number(target.port || 5432) });
    const via = new URL(db.url);
    via.hostname = proxy.host;
    via.port = String(await proxy.listen());
    proxiedUrl = via.toString();
  });
  afterEach(async () => {
    proxy.heal();
    await Promise.all(started.splice(0).map((l) => l.stop()));
    await proxy.close();
  });

  function listener(url: string, channels = ['chan_a', 'Chan "b"']) {
    const heard = new Signal<string>();
    const connected = new Signal();
    const errors = new Signal<unknown>();
    const l = new PgListener({
      connection: { connectionString: url, connectionTimeoutMillis: 1_000 },
      checkMs: 200,
      onNotify: heard.emit,
      onConnected: () => connected.emit(),
      onError: errors.emit,
    });
    started.push(l);
    return { l, heard, connected, errors, start: () => l.start(channels) };
  }
  const backends = () =>
    db.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'baton-listener'`,
    );

  it('hears its channels; after its backend is terminated it reconnects, reports it and hears again', async () => {
    const { heard, connected, errors, start } = listener(db.url);
    await start();
    await connected.next({ message: 'the first connection to be reported' });
    await db.query(`SELECT pg_notify('Chan "b"', '')`);
    expect(await heard.next({ message: 'the first notification' })).toBe('Chan "b"');

    const [first] = (await backends()).rows;
    await db.query('SELECT pg_terminate_backend($1)', [first!.pid]);
    await errors.next({ message: 'the loss to be reported' });
    await connected.next({ message: 'the reconnection to be reported' });
    const now = (await backends()).rows.map((r) => r.pid);
    expect(now).toHaveLength(1);
    expect(now).not.toContain(first!.pid);
    await db.query(`SELECT pg_notify('chan_a', '')`);
    expect(await heard.next({ message: 'a notification after the reconnect' })).toBe('chan_a');
  });

  it('notices a silently dead connection through its check and reconnects once the path heals', async () => {
    const { heard, connected, errors, start } = listener(proxiedUrl);
    await start();
    await connected.next();
    proxy.setBlackhole(true);
    await errors.next({ message: 'the failed check to be reported' });
    proxy.heal();
    await connected.next({ message: 'the reconnection after the heal' });
    await db.query(`SELECT pg_notify('chan_a', '')`);
    expect(await heard.next({ message: 'a notification after the heal' })).toBe('chan_a');
  });

  it('a start() against a server that never answers fails within the connect timeout and keeps nothing open', async () => {
    proxy.setBlackhole(true);
    const { start } = listener(proxiedUrl);
    // The check period (200 ms) passes several times while it connects: it must not start before.
    await expect(withTimeout(start(), 5_000, 'start() to settle')).rejects.toMatchObject({ code: 'DB_UNAVAILABLE' });
    await waitFor(() => proxy.stats().open === 0, { message: 'the proxied connection to be closed' });
  });

  it('stop() returns while the connection is blackholed', async () => {
    const { l, connected, start } = listener(proxiedUrl);
    await start();
    await connected.next();
    proxy.setBlackhole(true);
    await withTimeout(l.stop(), 5_000, 'stop() to return');
    await waitFor(() => proxy.stats().open === 0, { message: 'the proxied connection to be closed' });
  });
});
