// The moving parts of one chaos run: the private cluster (inside a network
// namespace when root), one fault proxy and one child worker per slot, a
// direct admin pool, and the fault actions that record themselves in the
// history with the jobs in flight (read from the database) at fault time.

import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ServerType, serve } from '@hono/node-server';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { createApp } from '../../src/http/app.ts';
import type { Baton } from '../../src/index.ts';
import { type PgCluster, startPgCluster } from '../helpers/pg-cluster.ts';
import { FaultProxy } from './fault-proxy.ts';
import { HistoryLog } from './history.ts';
import { createNetNs, type NetNs, netnsAvailability, type RuleHandle, skipLoudly } from './netns.ts';

const WORKER_TS = fileURLToPath(new URL('./worker.ts', import.meta.url));
/** The LISTEN sessions of this run's workers: only this database's, whatever else the server holds. */
const OWN_LISTENERS = `application_name = 'baton-listener' AND datname = current_database()`;

export interface Slot {
  index: number;
  proxy: FaultProxy;
  child: ChildProcess | null;
  /** The slot's name for this generation (`w<slot>.<generation>`), as the history records it. */
  workerId: string;
  /**
   * The engine's worker id, as `lease_owner` shows it: the slot's name on even slots; on odd
   * slots the engine generates one (the path that claims before its presence lock is first
   * held), learned from the worker's 'ready' message.
   */
  leaseOwner: string;
  generation: number;
  logPath: string;
  /** Set while the harness itself kills or stops this slot's worker. */
  stopping: boolean;
}

export interface HarnessOptions {
  dir: string;
  seed: number;
  workers: number;
  concurrency: number;
  leaseMs: number;
  /** Test-side mutation applied by workers (e.g. 'unfenced-complete'), to prove the suite can fail. */
  mutate?: string;
  /** Run PostgreSQL in a namespace (root): enables iptables loss and blackholes. */
  useNetns: boolean;
}

/** What the network faults actually used, for stdout and the report. */
export interface NetworkFaultTools {
  /** 'iptables': DROP rules inside the run's own namespace; 'proxy': the Node fault proxy (fallback). */
  blackhole: 'iptables' | 'proxy';
  loss: 'iptables' | 'none';
  /** Why the fallback was taken (absent when iptables was used). */
  fallbackReason?: string;
}

export class Harness {
  readonly o: HarnessOptions;
  readonly log: HistoryLog;
  cluster!: PgCluster;
  ns: NetNs | null = null;
  admin!: pg.Pool;
  readonly slots: Slot[] = [];
  readonly skipped: string[] = [];
  readonly timings: Record<string, number[]> = {};
  /** Workers that exited without the harness killing or stopping them (a crash is a failed run). */
  readonly crashes: string[] = [];
  tools: NetworkFaultTools = { blackhole: 'proxy', loss: 'none', fallbackReason: 'namespaces not requested (--no-netns)' };
  /** The HTTP API (daemon app) behind its own fault proxy, when the producer enqueues over HTTP. */
  api: { url: string; proxy: FaultProxy; server: ServerType } | null = null;
  /** Rule handles of faults still active: removed on heal, and in teardown whatever happens. */
  readonly #activeRules = new Set<RuleHandle>();

  constructor(o: HarnessOptions) {
    this.o = o;
    this.log = new HistoryLog(path.join(o.dir, 'runner.jsonl'));
  }

  get logPaths(): string[] {
    return [this.log.path, ...new Set(this.slots.flatMap((s) => s.logPath))];
  }

  async setup(): Promise<void> {
    // Never leave workers behind, whatever ends this process (pg-cluster's signal hook exits).
    process.on('exit', () => {
      for (const s of this.slots) if (s.child && s.child.exitCode === null) s.child.kill('SIGKILL');
    });
    const avail = this.o.useNetns ? netnsAvailability() : { ok: false, reason: 'namespaces disabled by --no-netns' };
    if (avail.ok) {
      this.ns = await createNetNs({ clientAddrs: this.o.workers });
      this.tools = { blackhole: 'iptables', loss: 'iptables' };
      console.log(
        `    network faults: iptables DROP inside namespace ${this.ns.name} (blackhole per worker source address, 5% loss both ways)`,
      );
    } else {
      this.tools = { blackhole: 'proxy', loss: 'none', fallbackReason: avail.reason! };
      skipLoudly(
        'iptables blackhole and packet loss: FALLING BACK to the Node proxy blackhole (bytes swallowed in user space, reset on heal) and latency without loss',
        avail.reason!,
        'FALLBACK',
      );
      this.skipped.push(`iptables blackhole + loss (proxy blackhole used, no packet loss): ${avail.reason}`);
    }
    this.cluster = this.ns ? await startPgCluster({ netns: this.ns.name, host: this.ns.nsAddr, port: 5432 }) : await startPgCluster();
    this.admin = new pg.Pool({ connectionString: this.cluster.url(), max: 3, connectionTimeoutMillis: 5_000 });
    this.admin.on('error', () => undefined);
    for (let i = 0; i < this.o.workers; i++) {
      // In a namespace each worker's upstream leaves from its own address, so one iptables
      // rule can partition that worker alone.
      const proxy = new FaultProxy({
        targetHost: this.cluster.host,
        targetPort: this.cluster.port,
        seed: this.o.seed + i,
        ...(this.ns ? { upstreamLocalAddress: this.ns.clientAddrs[i]! } : {}),
      });
      await proxy.listen();
      this.slots.push({ index: i, proxy, child: null, workerId: '', leaseOwner: '', generation: 0, logPath: '', stopping: false });
    }
  }

  /** The schema migrated and every worker slot started: the fleet the scenarios share. */
  async startFleet(): Promise<void> {
    await migrate(this.admin, { schema: 'baton' });
    await Promise.all(this.slots.map((s) => this.spawnWorker(s)));
  }

  /** Starts (or restarts after a kill) the worker of a slot; resolves once it is ready. */
  async spawnWorker(slot: Slot): Promise<void> {
    slot.generation += 1;
    slot.workerId = `w${slot.index}.${slot.generation}`;
    slot.leaseOwner = slot.workerId;
    slot.logPath = path.join(this.o.dir, `worker-${slot.index}.jsonl`);
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER_TS], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: {
        ...process.env,
        CHAOS_DB_URL: `postgres://postgres@127.0.0.1:${slot.proxy.port}/postgres`,
        CHAOS_WORKER_ID: slot.workerId,
        ...(slot.index % 2 === 1 ? { CHAOS_GENERATED_ID: '1' } : {}),
        CHAOS_LOG: slot.logPath,
        CHAOS_CONCURRENCY: String(this.o.concurrency),
        CHAOS_LEASE_MS: String(this.o.leaseMs),
        ...(this.o.mutate ? { CHAOS_MUTATE: this.o.mutate } : {}),
      },
    });
    slot.child = child;
    slot.stopping = false;
    const workerId = slot.workerId;
    child.once('exit', (code, signal) => {
      if (!slot.stopping) {
        this.crashes.push(`${workerId} (exit ${code ?? signal})`);
        console.log(`    !!! worker ${workerId} exited on its own (exit ${code ?? signal})`);
      }
    });
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker ${slot.workerId} not ready in 60 s`)), 60_000);
      child.on('message', (m: { type?: string; leaseOwner?: string }) => {
        if (m?.type === 'ready') {
          clearTimeout(timer);
          if (m.leaseOwner) slot.leaseOwner = m.leaseOwner;
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`worker ${slot.workerId} exited with ${code} before ready`));
      });
    });
    await ready;
  }

  /** Live leases (optionally of one lease owner), straight from the database. */
  async inFlight(leaseOwner?: string): Promise<string[]> {
    try {
      const r = await this.admin.query<{ id: string }>(
        `SELECT id::text FROM baton.jobs WHERE state IN ('leased','running') AND ($1::text IS NULL OR lease_owner = $1)`,
        [leaseOwner ?? null],
      );
      return r.rows.map((x) => x.id);
    } catch {
      return [];
    }
  }

  /** The slot of the live leader (the holder of the live leader lease), polled for up to 10 s. */
  async leaderSlot(): Promise<Slot> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const r = await this.admin
        .query<{ holder: string }>('SELECT holder FROM baton.leader_lease WHERE expires_at > now()')
        .catch(() => ({ rows: [] as Array<{ holder: string }> }));
      const slot = this.slots.find((s) => r.rows.some((row) => row.holder === s.leaseOwner) && s.child?.exitCode === null);
      if (slot) return slot;
      if (Date.now() > deadline) throw new Error('no live leader within 10 s');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The slot whose worker holds the most live leases now (faults should hit work), else `fallback`. */
  async busiestSlot(fallback: Slot): Promise<Slot> {
    try {
      const r = await this.admin.query<{ owner: string; n: number }>(
        `SELECT lease_owner AS owner, count(*)::int AS n FROM baton.jobs WHERE state IN ('leased','running')
         GROUP BY lease_owner ORDER BY n DESC, lease_owner`,
      );
      for (const row of r.rows) {
        const s = this.slots.find((x) => x.leaseOwner === row.owner && x.child?.exitCode === null && x.child.signalCode === null);
        if (s) return s;
      }
    } catch {
      // database away: use the planned slot
    }
    return fallback;
  }

  /**
   * For pool starvation: the live worker running the most jobs due to finish within the next
   * 0.2-1.4 s (their outcome writes will queue for a connection while the lease can still be
   * proven), else the busiest.
   */
  async slotFinishingSoon(fallback: Slot): Promise<Slot> {
    try {
      const r = await this.admin.query<{ owner: string; n: number }>(
        `SELECT lease_owner AS owner, count(*)::int AS n FROM baton.jobs
         WHERE state = 'running' AND started_at IS NOT NULL
           AND (payload->>'ms')::float8 - extract(epoch FROM clock_timestamp() - started_at) * 1000 BETWEEN 200 AND 1400
         GROUP BY lease_owner ORDER BY n DESC, lease_owner`,
      );
      for (const row of r.rows) {
        const s = this.slots.find((x) => x.leaseOwner === row.owner && x.child?.exitCode === null && x.child.signalCode === null);
        if (s) return s;
      }
    } catch {
      // database away: fall through
    }
    return this.busiestSlot(fallback);
  }

  #time(name: string, ms: number): void {
    this.timings[name] = [...(this.timings[name] ?? []), ms];
  }

  async kill(slot: Slot): Promise<void> {
    const child = slot.child;
    if (!child || child.exitCode !== null) return;
    const at = Date.now();
    const before = await this.inFlight(slot.leaseOwner);
    const exited = once(child, 'exit');
    slot.stopping = true;
    child.kill('SIGKILL');
    await exited;
    const after = await this.inFlight(slot.leaseOwner);
    this.log.append({ type: 'fault', kind: 'kill', worker: slot.workerId, at, inFlight: [...new Set([...before, ...after])] });
    await this.spawnWorker(slot);
  }

  /** SIGSTOP for durationMs: the zombie must come back fenced. */
  async pause(slot: Slot, durationMs: number): Promise<number | undefined> {
    const child = slot.child;
    if (!child || child.exitCode !== null) return undefined;
    const at = Date.now();
    const before = await this.inFlight(slot.leaseOwner);
    child.kill('SIGSTOP');
    const after = await this.inFlight(slot.leaseOwner);
    await new Promise((r) => setTimeout(r, durationMs));
    // Read before the signal: the process may run, and record what it did, before kill returns.
    const until = Date.now();
    child.kill('SIGCONT');
    this.log.append({
      type: 'fault',
      kind: 'pause',
      worker: slot.workerId,
      at,
      until,
      inFlight: [...new Set([...before, ...after])],
    });
    return until;
  }

  async pgRestart(): Promise<void> {
    const at = Date.now();
    const before = await this.inFlight();
    const t0 = performance.now();
    await this.cluster.restart();
    this.#time('pgRestartMs', performance.now() - t0);
    const after = await this.inFlight();
    this.log.append({ type: 'fault', kind: 'pg-restart', at, until: Date.now(), inFlight: [...new Set([...before, ...after])] });
  }

  /** Terminates every LISTEN connection; measures how long until all are back. */
  async killListeners(): Promise<void> {
    const at = Date.now();
    const live = this.slots.filter((s) => s.child && s.child.exitCode === null && s.child.signalCode === null).length;
    await this.admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE ${OWN_LISTENERS}`).catch(() => undefined);
    this.log.append({ type: 'fault', kind: 'listener', at, inFlight: [] });
    const t0 = performance.now();
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const r = await this.admin
        .query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${OWN_LISTENERS}`)
        .catch(() => ({ rows: [{ n: 0 }] }));
      if ((r.rows[0]?.n ?? 0) >= live) {
        this.#time('listenerBackMs', performance.now() - t0);
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    this.#time('listenerBackMs', Number.NaN);
  }

  /** 15 ms ± 5 ms each way on every proxy, plus 5% loss both ways (iptables, root only). */
  async network(durationMs: number): Promise<void> {
    const at = Date.now();
    const before = await this.inFlight();
    for (const s of this.slots) s.proxy.setLatency(15, 5);
    const loss = this.ns ? await this.#rule(this.ns.addLoss(this.cluster.port, 0.05)) : null;
    try {
      await new Promise((r) => setTimeout(r, durationMs));
    } finally {
      if (loss) await this.#heal(loss);
      for (const s of this.slots) s.proxy.setLatency(0, 0);
    }
    this.log.append({ type: 'fault', kind: this.ns ? 'loss+latency' : 'latency', at, until: Date.now(), inFlight: before });
  }

  /** Reset storm: every chunk on every proxy resets its connection with probability 5% (1-3 s bursts). */
  async resets(durationMs: number): Promise<void> {
    const at = Date.now();
    const before = await this.inFlight();
    for (const s of this.slots) s.proxy.setResetProbability(0.05);
    await new Promise((r) => setTimeout(r, durationMs));
    for (const s of this.slots) s.proxy.setResetProbability(0);
    this.log.append({ type: 'fault', kind: 'resets', at, until: Date.now(), inFlight: before });
  }

  /**
   * A silent partition of one worker. With root: iptables DROP, inside the run's namespace, of
   * every packet to and from that worker's source address (no error ever reaches either side;
   * after the heal TCP simply carries on). Without: the proxy swallows bytes (fallback).
   */
  async blackhole(slot: Slot, durationMs: number): Promise<void> {
    const at = Date.now();
    const before = await this.inFlight(slot.leaseOwner);
    const source = this.ns?.clientAddrs[slot.index];
    const rule = this.ns && source ? await this.#rule(this.ns.blackhole(this.cluster.port, source)) : null;
    if (!rule) slot.proxy.setBlackhole(true);
    try {
      await new Promise((r) => setTimeout(r, durationMs));
    } finally {
      if (rule) await this.#heal(rule);
      else slot.proxy.setBlackhole(false);
    }
    this.log.append({
      type: 'fault',
      kind: rule ? 'blackhole' : 'blackhole(proxy)',
      worker: slot.workerId,
      at,
      until: Date.now(),
      inFlight: before,
    });
  }

  /**
   * Pool starvation: the worker holds every connection of its engine's pool in an idle
   * transaction for durationMs, so claims, heartbeats and outcome writes all wait for a
   * connection. Its leases must self-fence (heartbeat deadline) and run elsewhere.
   */
  async starve(slot: Slot, durationMs: number): Promise<void> {
    const child = slot.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const at = Date.now();
    const before = await this.inFlight(slot.leaseOwner);
    const done = new Promise<{ held: number; max: number } | null>((resolve) => {
      const onMessage = (m: { type?: string; held?: number; max?: number }) => {
        if (m?.type !== 'starved') return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve({ held: m.held ?? 0, max: m.max ?? 0 });
      };
      const onExit = () => {
        child.off('message', onMessage);
        resolve(null);
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
    child.send({ type: 'starve', ms: durationMs });
    const r = await done;
    if (r) this.timings.starveHeldConnections = [...(this.timings.starveHeldConnections ?? []), r.held];
    this.log.append({ type: 'fault', kind: 'starve', worker: slot.workerId, at, until: Date.now(), inFlight: before });
  }

  /**
   * Serves the daemon's HTTP app (createApp over `producer`, as `baton serve` does) on a free
   * port, behind a fault proxy; producers enqueue through `api.url`.
   */
  async startApi(producer: Baton): Promise<string> {
    const app = createApp(producer, { metrics: false });
    const server: ServerType = await new Promise((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    const { port } = server.address() as AddressInfo;
    const proxy = new FaultProxy({ targetHost: '127.0.0.1', targetPort: port, seed: this.o.seed ^ 0xa91 });
    await proxy.listen();
    this.api = { url: `http://127.0.0.1:${proxy.port}`, proxy, server };
    return this.api.url;
  }

  /** Ambiguous acks: for durationMs, each HTTP response chunk resets its connection with `probability`. */
  async apiAck(probability: number, durationMs: number): Promise<void> {
    if (!this.api) throw new Error('apiAck: the HTTP API is not running (producer must be http)');
    const at = Date.now();
    const before = this.api.proxy.stats().responseResets;
    this.api.proxy.setResponseResetProbability(probability);
    try {
      await new Promise((r) => setTimeout(r, durationMs));
    } finally {
      this.api.proxy.setResponseResetProbability(0);
    }
    this.timings.apiResponseResets = [...(this.timings.apiResponseResets ?? []), this.api.proxy.stats().responseResets - before];
    this.log.append({ type: 'fault', kind: 'api-ack', at, until: Date.now(), inFlight: [] });
  }

  async #rule(adding: Promise<RuleHandle>): Promise<RuleHandle> {
    const h = await adding;
    this.#activeRules.add(h);
    return h;
  }

  async #heal(h: RuleHandle): Promise<void> {
    this.#activeRules.delete(h);
    await h();
  }

  /** SIGTERM every worker (SIGCONT first), SIGKILL after 15 s. */
  async stopWorkers(): Promise<void> {
    await Promise.all(
      this.slots.map(async (s) => {
        const c = s.child;
        if (!c || c.exitCode !== null || c.signalCode !== null) return;
        const exited = once(c, 'exit');
        s.stopping = true;
        c.kill('SIGCONT');
        c.kill('SIGTERM');
        const timer = setTimeout(() => c.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  async teardown(): Promise<void> {
    // Rules first: workers must be able to reach the database to stop cleanly.
    for (const h of [...this.#activeRules]) await this.#heal(h).catch(() => undefined);
    await this.stopWorkers().catch(() => undefined);
    if (this.api) {
      const { server, proxy } = this.api;
      await proxy.close().catch(() => undefined);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
    }
    for (const s of this.slots) await s.proxy.close().catch(() => undefined);
    await this.admin?.end().catch(() => undefined);
    await this.cluster?.destroy().catch(() => undefined);
    await this.ns?.destroy().catch(() => undefined);
  }

  /** Rules still in place in the namespace (must be none after every heal); null without a namespace. */
  async leftoverRules(): Promise<string[] | null> {
    return this.ns ? this.ns.rules().catch(() => null) : null;
  }
}
