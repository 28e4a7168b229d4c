// A network namespace with a veth pair, owned by one chaos run. PostgreSQL may
// run inside it; loss, reset and blackhole rules are iptables rules INSIDE the
// namespace only, so `ip netns del` undoes everything and the host is never touched.
// Root only: netnsAvailability() says why not, and callers must SKIP loudly.

import { execFile, execFileSync } from 'node:child_process';
import os from 'node:os';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Availability {
  ok: boolean;
  reason?: string;
}

function has(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Whether this process can create namespaces and iptables rules; when not, why. */
export function netnsAvailability(): Availability {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'not root (network namespaces and iptables need root)' };
  for (const cmd of ['ip', 'iptables', 'ss']) {
    if (!has(cmd)) return { ok: false, reason: `\`${cmd}\` is not installed (apt-get install -y iptables iproute2)` };
  }
  return { ok: true };
}

/**
 * Prints the loud line every root-only fault must print when it cannot run or
 * falls back: on stdout (where the run's summary is), framed so nobody misses it.
 */
export function skipLoudly(what: string, reason: string, verb = 'SKIP'): void {
  const line = `${verb} ${what}: ${reason}`;
  process.stdout.write(`\n${'!'.repeat(line.length)}\n${line}\n${'!'.repeat(line.length)}\n\n`);
}

/** Removes exactly the rules one fault added (iptables -D of each), idempotent. */
export type RuleHandle = () => Promise<void>;

export interface NetNs {
  readonly name: string;
  /** Host end of the veth (the address workers appear from inside the namespace). */
  readonly hostAddr: string;
  /** Namespace end; PostgreSQL listens here. */
  readonly nsAddr: string;
  /**
   * Extra host-side source addresses on the veth, one per client that must be
   * partitioned alone (bind the client's upstream socket to it).
   */
  readonly clientAddrs: readonly string[];
  /** Run a command inside the namespace. */
  exec(cmd: string, args: string[]): Promise<string>;
  /** Random drop of `probability` of packets to and from `port`, both directions. */
  addLoss(port: number, probability: number): Promise<RuleHandle>;
  /** Silently drop everything to and from `port` (from `source` only, when given): peers never see an error. */
  blackhole(port: number, source?: string): Promise<RuleHandle>;
  /** Answer every new packet to `port` with a TCP reset. */
  rejectWithReset(port: number): Promise<RuleHandle>;
  /** Kill established sessions on `port` now (ss -K). */
  killSessions(port: number): Promise<void>;
  /** The namespace's filter rules (iptables -S), for checks and reports. */
  rules(): Promise<string[]>;
  /** Remove every rule (flush the namespace's filter table). */
  heal(): Promise<void>;
  /** Delete the namespace (and with it the veth and every rule). Idempotent. */
  destroy(): Promise<void>;
}

interface LiveNs {
  name: string;
  hostIf: string;
}
const live = new Map<string, LiveNs>();
let hooked = false;

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function nsPids(name: string): number[] {
  try {
    return execFileSync('ip', ['netns', 'pids', name], { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * Synchronous, best-effort removal for exit and signal paths: stop every process
 * still inside the namespace (a PostgreSQL cluster keeps a namespace alive after
 * `ip netns del`), then delete the namespace and the host end of the veth.
 */
function destroySync(ns: LiveNs): void {
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of nsPids(ns.name)) {
      try {
        process.kill(pid, sig);
      } catch {
        // gone
      }
    }
  };
  // SIGQUIT is PostgreSQL's immediate shutdown; give it a moment, then SIGKILL what is left.
  signal('SIGQUIT');
  for (let i = 0; i < 30 && nsPids(ns.name).length > 0; i++) sleepSync(100);
  signal('SIGKILL');
  for (const args of [
    ['netns', 'del', ns.name],
    ['link', 'del', ns.hostIf],
  ]) {
    try {
      execFileSync('ip', args, { stdio: 'ignore' });
    } catch {
      // already gone
    }
  }
  live.delete(ns.name);
}

/** Every namespace and rule this process made goes away on exit and on SIGINT / SIGTERM / SIGHUP. */
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const ns of [...live.values()]) destroySync(ns);
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      for (const ns of [...live.values()]) destroySync(ns);
      process.exit(128 + (os.constants.signals[sig] ?? 1));
    });
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes namespaces (and host veth ends) left by chaos runs whose process is gone
 * (SIGKILL leaves no chance to clean up). Names carry the creating pid; a live
 * pid's namespace is never touched. Returns the names removed.
 */
export function reapStaleNamespaces(): string[] {
  const removed: string[] = [];
  let names: string[] = [];
  try {
    names = execFileSync('ip', ['netns', 'list'], { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .split('\n')
      .map((l) => l.split(' ')[0]!)
      .filter((n) => /^bt\d+$/.test(n));
  } catch {
    return removed;
  }
  for (const name of names) {
    const pid = Number(name.slice(2));
    if (pid === process.pid || pidAlive(pid)) continue;
    destroySync({ name, hostIf: `bh${pid}`.slice(0, 15) });
    removed.push(name);
  }
  return removed;
}

/** Third octet for 10.213.N.0/24: from the pid, skipping subnets already on an interface. */
function pickSubnet(tag: string): number {
  let used = '';
  try {
    used = execFileSync('ip', ['-o', '-4', 'addr', 'show'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  } catch {
    // no list: trust the pid
  }
  const start = (Number.parseInt(tag, 10) || 0) % 250;
  for (let i = 0; i < 250; i++) {
    const n = (start + i) % 250;
    if (!used.includes(`10.213.${n}.`)) return n;
  }
  throw new Error('netns: no free 10.213.N.0/24 subnet');
}

export interface NetNsOptions {
  /** Name suffix (default: this pid, so stale namespaces can be traced to a dead process). */
  tag?: string;
  /** Extra host-side addresses to create for per-client partitions (default 8). */
  clientAddrs?: number;
}

/**
 * Creates namespace `bt<pid>` with veth 10.213.N.1 (host) <-> 10.213.N.2
 * (namespace) on a /24, plus host addresses 10.213.N.10+i for clients that must
 * be partitioned alone. The addresses live only on interfaces this run creates
 * and deletes.
 */
export async function createNetNs(options: NetNsOptions | string = {}): Promise<NetNs> {
  const o: NetNsOptions = typeof options === 'string' ? { tag: options } : options;
  const tag = o.tag ?? String(process.pid);
  const avail = netnsAvailability();
  if (!avail.ok) throw new Error(`netns unavailable: ${avail.reason}`);
  reapStaleNamespaces();
  const name = `bt${tag}`.slice(0, 12);
  const hostIf = `bh${tag}`.slice(0, 15);
  const nsIf = `bn${tag}`.slice(0, 15);
  const n = pickSubnet(tag);
  const hostAddr = `10.213.${n}.1`;
  const nsAddr = `10.213.${n}.2`;
  const clientAddrs = Array.from({ length: o.clientAddrs ?? 8 }, (_, i) => `10.213.${n}.${10 + i}`);
  const sh = async (args: string[]) => (await run(args[0]!, args.slice(1), { timeout: 30_000 })).stdout;
  const inNs = (args: string[]) => sh(['ip', 'netns', 'exec', name, ...args]);

  hookExit();
  await sh(['ip', 'netns', 'add', name]);
  live.set(name, { name, hostIf });
  try {
    await sh(['ip', 'link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf]);
    await sh(['ip', 'link', 'set', nsIf, 'netns', name]);
    await sh(['ip', 'addr', 'add', `${hostAddr}/24`, 'dev', hostIf]);
    for (const a of clientAddrs) await sh(['ip', 'addr', 'add', `${a}/24`, 'dev', hostIf]);
    await sh(['ip', 'link', 'set', hostIf, 'up']);
    await inNs(['ip', 'addr', 'add', `${nsAddr}/24`, 'dev', nsIf]);
    await inNs(['ip', 'link', 'set', nsIf, 'up']);
    await inNs(['ip', 'link', 'set', 'lo', 'up']);
  } catch (err) {
    destroySync({ name, hostIf });
    throw err;
  }

  // Each fault's rules are removed by their own handle (-D), so overlapping faults
  // (a blackhole during a loss window) heal independently.
  const ipt = async (rules: string[][]): Promise<RuleHandle> => {
    const added: string[][] = [];
    const remove: RuleHandle = async () => {
      for (const r of added.splice(0).reverse()) await inNs(['iptables', '-w', '-D', ...r]).catch(() => undefined);
    };
    try {
      for (const r of rules) {
        await inNs(['iptables', '-w', '-A', ...r]);
        added.push(r);
      }
    } catch (err) {
      await remove();
      throw err;
    }
    return remove;
  };
  const from = (source?: string) => (source ? ['-s', source] : []);
  const to = (source?: string) => (source ? ['-d', source] : []);
  let destroyed = false;
  return {
    name,
    hostAddr,
    nsAddr,
    clientAddrs,
    exec: (cmd, args) => inNs([cmd, ...args]),
    addLoss: (port, p) => {
      const prob = ['-m', 'statistic', '--mode', 'random', '--probability', String(p), '-j', 'DROP'];
      return ipt([
        ['INPUT', '-p', 'tcp', '--dport', String(port), ...prob],
        ['OUTPUT', '-p', 'tcp', '--sport', String(port), ...prob],
      ]);
    },
    blackhole: (port, source) =>
      ipt([
        ['INPUT', ...from(source), '-p', 'tcp', '--dport', String(port), '-j', 'DROP'],
        ['OUTPUT', ...to(source), '-p', 'tcp', '--sport', String(port), '-j', 'DROP'],
      ]),
    rejectWithReset: (port) => ipt([['INPUT', '-p', 'tcp', '--dport', String(port), '-j', 'REJECT', '--reject-with', 'tcp-reset']]),
    killSessions: (port) => inNs(['ss', '-K', 'state', 'established', `( sport = :${port} )`]).then(() => undefined),
    rules: async () => (await inNs(['iptables', '-w', '-S'])).split('\n').filter((l) => l.startsWith('-A')),
    heal: () => inNs(['iptables', '-w', '-F']).then(() => undefined),
    destroy: async () => {
      if (destroyed) return;
      destroyed = true;
      await sh(['ip', 'netns', 'del', name]).catch(() => undefined);
      // The host end normally dies with its peer; make sure.
      await sh(['ip', 'link', 'del', hostIf]).catch(() => undefined);
      // A process still inside (a cluster that failed to stop) would keep it alive: sweep.
      if (live.has(name)) destroySync({ name, hostIf });
      live.delete(name);
    },
  };
}
