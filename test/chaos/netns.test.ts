// The namespace recipe end to end: PostgreSQL inside a namespace, reached over
// the veth; a blackhole stalls silently (only a client timeout notices), ss -K
// cuts sessions, heal restores traffic. Root only; skips loudly otherwise.
import net from 'node:net';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts';
import { createNetNs, type NetNs, netnsAvailability, skipLoudly } from './netns.ts';

const avail = netnsAvailability();
if (!avail.ok) skipLoudly('test/chaos/netns.test.ts (namespace, iptables loss/blackhole)', avail.reason!);

describe.skipIf(!avail.ok)('netns faults', () => {
  let ns: NetNs | undefined;
  let cluster: PgCluster | undefined;
  afterAll(async () => {
    await cluster?.destroy();
    await ns?.destroy();
  });

  it('blackhole stalls without error, ss -K resets, heal restores', async () => {
    ns = await createNetNs();
    cluster = await startPgCluster({ netns: ns.name, host: ns.nsAddr, port: 5432 });
    const connect = async (queryTimeoutMs = 1_500) => {
      const c = new pg.Client({ connectionString: cluster!.url(), query_timeout: queryTimeoutMs, connectionTimeoutMillis: 3_000 });
      c.on('error', () => undefined);
      await c.connect();
      return c;
    };
    const a = await connect();
    expect((await a.query('SELECT 1 AS x')).rows[0].x).toBe(1);

    await ns.blackhole(cluster.port);
    await expect(a.query('SELECT 2')).rejects.toThrow(/timeout/i);
    await ns.heal();
    await a.end().catch(() => undefined);

    const b = await connect();
    expect((await b.query('SELECT 3 AS x')).rows[0].x).toBe(3);
    const cut = new Promise((resolve) => b.once('error', resolve));
    await ns.killSessions(cluster.port);
    await cut;
    await b.end().catch(() => undefined);

    // Under loss every query still succeeds, given time: a segment lost three times in a row
    // costs over a second of retransmission timeouts, so this client waits far longer than
    // the blackhole's. The rules go even when a query fails, or the next test would see them.
    const loss = await ns.addLoss(cluster.port, 0.05);
    try {
      expect(await ns.rules()).toHaveLength(2);
      const c = await connect(30_000);
      for (let i = 0; i < 20; i++) await c.query('SELECT 1');
      await c.end();
    } finally {
      await loss();
    }
    expect(await ns.rules()).toEqual([]);
  });

  it('a blackhole of one source address stalls that client only; its handle removes exactly its rules', async () => {
    expect(ns && cluster).toBeTruthy();
    const [mine, other] = ns!.clientAddrs;
    const connectFrom = async (localAddress: string) => {
      // pg has no localAddress option: hand it a socket whose connect() binds the source address.
      const stream = () => {
        const s = new net.Socket();
        const connect = s.connect.bind(s) as (o: net.TcpNetConnectOpts) => net.Socket;
        (s as unknown as { connect: (port: number, host: string) => net.Socket }).connect = (port, host) =>
          connect({ port, host, localAddress });
        return s;
      };
      const c = new pg.Client({ connectionString: cluster!.url(), stream, query_timeout: 1_500 } as pg.ClientConfig);
      c.on('error', () => undefined);
      await c.connect();
      return c;
    };
    const a = await connectFrom(mine!);
    const b = await connectFrom(other!);
    const loss = await ns!.addLoss(cluster!.port, 0.01);
    const hole = await ns!.blackhole(cluster!.port, mine);
    expect((await ns!.rules()).length).toBe(4);
    await expect(a.query('SELECT 1')).rejects.toThrow(/timeout/i);
    expect((await b.query('SELECT 2 AS x')).rows[0].x).toBe(2);
    await hole();
    // The loss rules of the overlapping fault stay until their own handle runs.
    expect((await ns!.rules()).length).toBe(2);
    await loss();
    expect(await ns!.rules()).toEqual([]);
    // DROP is silent: after the heal the stalled connection simply carries on.
    const deadline = Date.now() + 10_000;
    let back = false;
    while (!back && Date.now() < deadline)
      back = await a.query('SELECT 3').then(
        () => true,
        () => false,
      );
    expect(back).toBe(true);
    await a.end().catch(() => undefined);
    await b.end();
  });
});
