// A network namespace with a veth pair, owned by one chaos run. PostgreSQL may
// run inside it; loss, reset and blackhole rules are iptables rules INSIDE the
// namespace only, so `ip netns del` undoes everything (RELIABILITY.md §2.1).
// Root only: netnsAvailability() says why not, and callers must SKIP loudly.

import { execFile, execFileSync } from 'node:child_process';
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

/** Prints the loud SKIP line every root-only scenario must print when it cannot run. */
export function skipLoudly(what: string, reason: string): void {
  const line = `SKIP ${what}: ${reason}`;
  process.stderr.write(`\n${'!'.repeat(line.length)}\n${line}\n${'!'.repeat(line.length)}\n\n`);
}

export interface NetNs {
  readonly name: string;
  /** Host end of the veth (the address workers appear from inside the namespace). */
  readonly hostAddr: string;
  /** Namespace end; PostgreSQL listens here. */
  readonly nsAddr: string;
  /** Run a command inside the namespace. */
  exec(cmd: string, args: string[]): Promise<string>;
  /** Random drop of `probability` of packets to and from `port`, both directions. */
  addLoss(port: number, probability: number): Promise<void>;
  /** Silently drop everything to and from `port`: peers never see an error. */
  blackhole(port: number): Promise<void>;
  /** Answer every new packet to `port` with a TCP reset. */
  rejectWithReset(port: number): Promise<void>;
  /** Kill established sessions on `port` now (ss -K). */
  killSessions(port: number): Promise<void>;
  /** Remove every rule (flush the namespace's filter table). */
  heal(): Promise<void>;
  /** Delete the namespace (and with it the veth and every rule). Idempotent. */
  destroy(): Promise<void>;
}

const live = new Set<string>();
let hooked = false;

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const name of live) {
      try {
        execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
      } catch {
        // gone
      }
    }
  });
}

/**
 * Creates namespace `bt<pid>` with veth 10.213.N.1 (host) <-> 10.213.N.2
 * (namespace). N comes from the pid so concurrent runs do not collide. The
 * address lives only on interfaces this run creates and deletes.
 */
export async function createNetNs(tag = String(process.pid)): Promise<NetNs> {
  const avail = netnsAvailability();
  if (!avail.ok) throw new Error(`netns unavailable: ${avail.reason}`);
  const name = `bt${tag}`.slice(0, 12);
  const hostIf = `bh${tag}`.slice(0, 15);
  const nsIf = `bn${tag}`.slice(0, 15);
  const n = (Number.parseInt(tag, 10) || 0) % 250;
  const hostAddr = `10.213.${n}.1`;
  const nsAddr = `10.213.${n}.2`;
  const sh = async (args: string[]) => (await run(args[0]!, args.slice(1), { timeout: 30_000 })).stdout;
  const inNs = (args: string[]) => sh(['ip', 'netns', 'exec', name, ...args]);

  await sh(['ip', 'netns', 'add', name]);
  live.add(name);
  hookExit();
  try {
    await sh(['ip', 'link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf]);
    await sh(['ip', 'link', 'set', nsIf, 'netns', name]);
    await sh(['ip', 'addr', 'add', `${hostAddr}/30`, 'dev', hostIf]);
    await sh(['ip', 'link', 'set', hostIf, 'up']);
    await inNs(['ip', 'addr', 'add', `${nsAddr}/30`, 'dev', nsIf]);
    await inNs(['ip', 'link', 'set', nsIf, 'up']);
    await inNs(['ip', 'link', 'set', 'lo', 'up']);
  } catch (err) {
    await sh(['ip', 'netns', 'del', name]).catch(() => undefined);
    await sh(['ip', 'link', 'del', hostIf]).catch(() => undefined);
    live.delete(name);
    throw err;
  }

  const ipt = (rule: string[]) => inNs(['iptables', '-w', ...rule]).then(() => undefined);
  let destroyed = false;
  return {
    name,
    hostAddr,
    nsAddr,
    exec: (cmd, args) => inNs([cmd, ...args]),
    addLoss: async (port, p) => {
      const prob = ['-m', 'statistic', '--mode', 'random', '--probability', String(p), '-j', 'DROP'];
      await ipt(['-A', 'INPUT', '-p', 'tcp', '--dport', String(port), ...prob]);
      await ipt(['-A', 'OUTPUT', '-p', 'tcp', '--sport', String(port), ...prob]);
    },
    blackhole: async (port) => {
      await ipt(['-A', 'INPUT', '-p', 'tcp', '--dport', String(port), '-j', 'DROP']);
      await ipt(['-A', 'OUTPUT', '-p', 'tcp', '--sport', String(port), '-j', 'DROP']);
    },
    rejectWithReset: (port) =>
      ipt(['-A', 'INPUT', '-p', 'tcp', '--dport', String(port), '-j', 'REJECT', '--reject-with', 'tcp-reset']),
    killSessions: (port) => inNs(['ss', '-K', 'state', 'established', `( sport = :${port} )`]).then(() => undefined),
    heal: () => ipt(['-F']),
    destroy: async () => {
      if (destroyed) return;
      destroyed = true;
      await sh(['ip', 'netns', 'del', name]).catch(() => undefined);
      // The host end normally dies with its peer; make sure.
      await sh(['ip', 'link', 'del', hostIf]).catch(() => undefined);
      live.delete(name);
    },
  };
}
