// The fault proxy against a local echo server: order under jitter, seeded
// resets, blackhole stall and reset on heal, refusal, reset-all.
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FaultProxy, prng } from './fault-proxy.ts';

let echo: net.Server;
let proxy: FaultProxy;
let echoPort: number;

beforeEach(async () => {
  echo = net.createServer((s) => {
    s.on('error', () => undefined);
    s.pipe(s);
  });
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
  echoPort = (echo.address() as net.AddressInfo).port;
  proxy = new FaultProxy({ targetHost: '127.0.0.1', targetPort: echoPort, seed: 7 });
  await proxy.listen();
});

afterEach(async () => {
  await proxy.close();
  await new Promise<void>((r) => echo.close(() => r()));
});

function connect(): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(proxy.port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** Resolves with everything received once `n` bytes arrived, or rejects on error/close. */
function receive(s: net.Socket, n: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    s.on('data', (d) => {
      buf += d.toString();
      if (buf.length >= n) resolve(buf);
    });
    s.once('error', reject);
    s.once('close', () => reject(new Error(`closed after ${buf.length} bytes`)));
  });
}

function closed(s: net.Socket): Promise<string> {
  return new Promise((resolve) => {
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    s.once('close', () => resolve('close'));
  });
}

describe('FaultProxy', () => {
  it('prng is deterministic per seed', () => {
    const a = prng(42);
    const b = prng(42);
    const xs = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
  });

  it('keeps byte order under latency with jitter, and never delivers early', async () => {
    proxy.setLatency(20, 15);
    const s = await connect();
    const parts = Array.from({ length: 40 }, (_, i) => `<${i}>`);
    const expected = parts.join('');
    const got = receive(s, expected.length);
    const t0 = Date.now();
    for (const p of parts) s.write(p);
    expect(await got).toBe(expected);
    // Two hops (there and back) of at least 5 ms each.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(10);
    s.destroy();
  });

  it('resets a connection when the seeded coin says so', async () => {
    proxy.setResetProbability(1);
    const s = await connect();
    const end = closed(s);
    s.write('hello');
    expect(await end).toMatch(/ECONNRESET|close/);
    expect(proxy.stats().resets).toBe(1);
  });

  it('a response reset delivers the request upstream, then resets before the answer reaches the client', async () => {
    const seen: string[] = [];
    echo.on('connection', (c) => c.on('data', (d) => seen.push(d.toString())));
    proxy.setResponseResetProbability(1);
    const s = await connect();
    const end = closed(s);
    s.write('request');
    expect(await end).toMatch(/ECONNRESET|close/);
    expect(seen.join('')).toBe('request');
    expect(proxy.stats().responseResets).toBe(1);
  });

  it('blackhole swallows bytes without closing, then resets the tainted stream on heal', async () => {
    const s = await connect();
    const first = receive(s, 2);
    s.write('ok');
    await first;
    proxy.setBlackhole(true);
    const end = closed(s);
    s.write('lost');
    await expect.poll(() => proxy.stats().swallowedBytes).toBe(4);
    expect(s.destroyed).toBe(false);
    expect(proxy.stats().open).toBe(1);
    proxy.setBlackhole(false);
    expect(await end).toMatch(/ECONNRESET|close/);
  });

  it('refuses new connections while refuse is on, accepts again after', async () => {
    proxy.setRefuse(true);
    const s = net.connect(proxy.port, '127.0.0.1');
    expect(await closed(s)).toMatch(/ECONNRESET|close/);
    expect(proxy.stats().refused).toBe(1);
    proxy.setRefuse(false);
    const ok = await connect();
    const got = receive(ok, 3);
    ok.write('abc');
    expect(await got).toBe('abc');
    ok.destroy();
  });

  it('resetAll cuts every open connection', async () => {
    const a = await connect();
    const b = await connect();
    await expect.poll(() => proxy.stats().open).toBe(2);
    const ends = Promise.all([closed(a), closed(b)]);
    proxy.resetAll();
    expect(await ends).toHaveLength(2);
    expect(proxy.stats().open).toBe(0);
  });
});
