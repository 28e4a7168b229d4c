// A small TCP fault proxy owned by the chaos suite (toxiproxy is not available
// here). Per direction, chunks are delivered in order after latency ± jitter;
// resets come from a seeded PRNG so a run replays from its seed.

import net from 'node:net';

/** mulberry32: a tiny seeded PRNG, good enough for fault schedules. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface FaultProxyOptions {
  targetHost: string;
  targetPort: number;
  listenHost?: string;
  /** 0 (default) picks a free port. */
  listenPort?: number;
  seed?: number;
  /** Source address of the upstream connections (a per-client address lets iptables partition this proxy alone). */
  upstreamLocalAddress?: string;
}

export interface FaultProxyStats {
  accepted: number;
  refused: number;
  resets: number;
  /** Resets of the response direction only (setResponseResetProbability): the request had been forwarded. */
  responseResets: number;
  swallowedBytes: number;
  forwardedBytes: number;
  open: number;
}

interface Pipe {
  client: net.Socket;
  upstream: net.Socket;
  /** Bytes were swallowed by a blackhole: the stream is corrupt and must be reset on heal. */
  tainted: boolean;
  closed: boolean;
}

/** An in-order delayed writer for one direction of one connection. */
class DelayedLane {
  private readonly queue: Array<{ at: number; chunk: Buffer }> = [];
  private timer: NodeJS.Timeout | undefined;
  private lastAt = 0;
  constructor(private readonly out: net.Socket) {}

  push(chunk: Buffer, delayMs: number): void {
    if (delayMs <= 0 && this.queue.length === 0) {
      this.out.write(chunk);
      return;
    }
    // Never earlier than the previous chunk: latency must not reorder the stream.
    const at = Math.max(Date.now() + delayMs, this.lastAt);
    this.lastAt = at;
    this.queue.push({ at, chunk });
    this.arm();
  }

  private arm(): void {
    if (this.timer || this.queue.length === 0) return;
    const wait = Math.max(0, this.queue[0]!.at - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const now = Date.now();
      while (this.queue.length > 0 && this.queue[0]!.at <= now) {
        const { chunk } = this.queue.shift()!;
        if (!this.out.destroyed) this.out.write(chunk);
      }
      this.arm();
    }, wait);
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }
}

export class FaultProxy {
  readonly options: FaultProxyOptions;
  private server: net.Server | undefined;
  private readonly pipes = new Set<Pipe>();
  private readonly random: () => number;
  private latencyMs = 0;
  private jitterMs = 0;
  private resetProb = 0;
  private responseResetProb = 0;
  private blackhole = false;
  private refuse = false;
  private readonly counters: Omit<FaultProxyStats, 'open'> = {
    accepted: 0,
    refused: 0,
    resets: 0,
    responseResets: 0,
    swallowedBytes: 0,
    forwardedBytes: 0,
  };

  constructor(options: FaultProxyOptions) {
    this.options = options;
    this.random = prng(options.seed ?? 1);
  }

  async listen(): Promise<number> {
    this.server = net.createServer((c) => this.accept(c));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.options.listenPort ?? 0, this.options.listenHost ?? '127.0.0.1', () => resolve());
    });
    return this.port;
  }

  get port(): number {
    const a = this.server?.address();
    if (!a || typeof a !== 'object') throw new Error('fault proxy is not listening');
    return a.port;
  }

  get host(): string {
    return this.options.listenHost ?? '127.0.0.1';
  }

  stats(): FaultProxyStats {
    return { ...this.counters, open: this.pipes.size };
  }

  /** Added one-way delay per chunk, uniformly jittered by ± jitterMs. */
  setLatency(ms: number, jitterMs = 0): void {
    this.latencyMs = ms;
    this.jitterMs = jitterMs;
  }

  /** Probability that any one forwarded chunk resets its connection instead. */
  setResetProbability(p: number): void {
    this.resetProb = p;
  }

  /**
   * Probability that a chunk coming BACK from the target resets the connection
   * instead of being delivered. The request was forwarded in full (the target
   * answered it), so the client sees an ambiguous outcome: committed, never acked.
   */
  setResponseResetProbability(p: number): void {
    this.responseResetProb = p;
  }

  /**
   * Swallow every byte while on; sockets stay open, so peers see a silent stall.
   * On heal, connections that lost bytes are reset (their byte stream is corrupt).
   */
  setBlackhole(on: boolean): void {
    this.blackhole = on;
    if (!on) for (const p of [...this.pipes]) if (p.tainted) this.kill(p);
  }

  /** Reset new connections at once while on. */
  setRefuse(on: boolean): void {
    this.refuse = on;
  }

  /** Reset every open connection now. */
  resetAll(): void {
    for (const p of [...this.pipes]) this.kill(p);
  }

  /** Back to a clean pass-through. */
  heal(): void {
    this.setLatency(0, 0);
    this.setResetProbability(0);
    this.setResponseResetProbability(0);
    this.setRefuse(false);
    this.setBlackhole(false);
  }

  async close(): Promise<void> {
    this.resetAll();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private delay(): number {
    if (this.latencyMs <= 0 && this.jitterMs <= 0) return 0;
    return Math.max(0, this.latencyMs + (this.random() * 2 - 1) * this.jitterMs);
  }

  private kill(p: Pipe): void {
    if (p.closed) return;
    p.closed = true;
    this.pipes.delete(p);
    this.counters.resets += 1;
    p.client.resetAndDestroy();
    p.upstream.resetAndDestroy();
  }

  private accept(client: net.Socket): void {
    if (this.refuse) {
      this.counters.refused += 1;
      client.on('error', () => undefined);
      client.resetAndDestroy();
      return;
    }
    this.counters.accepted += 1;
    const upstream = net.connect({
      port: this.options.targetPort,
      host: this.options.targetHost,
      ...(this.options.upstreamLocalAddress ? { localAddress: this.options.upstreamLocalAddress } : {}),
    });
    const pipe: Pipe = { client, upstream, tainted: false, closed: false };
    this.pipes.add(pipe);
    const toUpstream = new DelayedLane(upstream);
    const toClient = new DelayedLane(client);
    const forward = (lane: DelayedLane, response: boolean) => (chunk: Buffer) => {
      if (pipe.closed) return;
      if (this.blackhole) {
        pipe.tainted = true;
        this.counters.swallowedBytes += chunk.length;
        return;
      }
      if (this.resetProb > 0 && this.random() < this.resetProb) {
        this.kill(pipe);
        return;
      }
      if (response && this.responseResetProb > 0 && this.random() < this.responseResetProb) {
        this.counters.responseResets += 1;
        this.kill(pipe);
        return;
      }
      this.counters.forwardedBytes += chunk.length;
      lane.push(chunk, this.delay());
    };
    client.on('data', forward(toUpstream, false));
    upstream.on('data', forward(toClient, true));
    const end = () => {
      toUpstream.clear();
      toClient.clear();
      if (!pipe.closed) {
        pipe.closed = true;
        this.pipes.delete(pipe);
        client.destroy();
        upstream.destroy();
      }
    };
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  }
}
