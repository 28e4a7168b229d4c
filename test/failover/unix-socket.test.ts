// A unix-socket host in a multi-host URL (percent-encoded, as libpq spells it) stays a socket:
// the session reaches the shared server through its socket directory, not a DNS lookup.
import { describe, expect, it } from 'vitest';
import { newClient, parseConnectionString } from '../../src/db/pg/multi-host.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase();

describe('a unix-socket host with target_session_attrs', () => {
  it('connects through the socket, to the database the URL names', async (ctx) => {
    const dirs = (await db.query<{ d: string }>("SELECT current_setting('unix_socket_directories') AS d")).rows[0]!.d;
    const dir = dirs.split(',')[0]!.trim();
    // The embedded server (no DATABASE_URL) listens on TCP only.
    if (dir === '') ctx.skip('the server has no unix socket directory');
    const { port } = new URL(db.url);
    const url = `postgres://postgres@${encodeURIComponent(dir)}:${port || 5432}/${db.name}?target_session_attrs=read-write`;
    const client = newClient(parseConnectionString(url));
    client.on('error', () => undefined);
    await client.connect();
    try {
      const r = await client.query<{ addr: string | null; db: string }>(
        'SELECT inet_server_addr()::text AS addr, current_database() AS db',
      );
      expect(r.rows[0]).toEqual({ addr: null, db: db.name });
    } finally {
      await client.end();
    }
  });
});
