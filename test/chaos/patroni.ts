// The chaos tier's failover behind the usual HA front: deploy/ha's example (etcd, two Patroni
// nodes with synchronous_mode, haproxy routing to the primary by Patroni's /primary check),
// started by deploy/ha/run-local.sh on free ports, with engines and producers on haproxy's port
// under load (test/failover/scenario.ts). Each fault runs on a fresh cluster: the primary's node
// crashed (kill -9 of its Patroni and PostgreSQL), then a `patronictl switchover`. Holds each to
// no acknowledged enqueue or outcome lost, no token reused, no stale outcome accepted, every job
// finished; measures the time to resume. Writes results/chaos-patroni-<time>.{json,md}.

import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { type FailoverResult, runFailoverOn } from '../failover/scenario.ts';
import { clusterUnavailable, PG_BIN } from '../helpers/pg-cluster.ts';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const SCRIPT = path.join(ROOT, 'deploy/ha/run-local.sh');

/** The example's timing, as run-local.sh passes it to Patroni and haproxy (deploy/ha/README.md). */
export const HA_SETTINGS = { ttl: 10, loopWait: 1, retryTimeout: 4, checkInter: '500ms', checkFall: 2, nodes: 2 };
const CRASH_LAG_MS = 1_000;
const LOAD = { mode: 'sync' as const, engines: 2, slots: 8, producers: 4, before: 300, after: 200, handlerMs: 5 };

export type HaFault = 'crash' | 'switchover';
export interface PatroniRun extends FailoverResult {
  fault: HaFault;
  /** How long Patroni took to answer the switchover request (it answers once the candidate leads). */
  switchoverAnsweredMs?: number;
  /** From the fault to haproxy marking the old primary down and the new one up (its log), ms. */
  haproxyDownMs: number;
  haproxyUpMs: number;
  violations: string[];
}
export interface PatroniRunResult {
  ok: boolean;
  skipped: string | null;
  runs: PatroniRun[];
}

/** Why this machine cannot run the tier (null: it can): the tools deploy/ha needs. */
export function haUnavailable(): string | null {
  const cluster = clusterUnavailable();
  if (cluster) return cluster;
  for (const tool of ['patroni', 'patronictl', 'etcd', 'haproxy', 'psql', 'python3', 'setsid', 'setpriv']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `${tool} not installed (Debian: apt-get install patroni etcd-server haproxy postgresql-client)`;
    }
  }
  return null;
}

/** `n` consecutive free TCP ports on 127.0.0.1 (run-local.sh counts nodes' ports up from a base). */
async function freePortRun(n: number): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    let ok = true;
    for (let p = base; p < base + n && ok; p++) ok = await free(p);
    if (ok) return base;
  }
  throw new Error(`no ${n} consecutive free ports`);
}

const SYNC_STANDBY_WAIT_MS = 30_000;

/**
 * A switchover as `patronictl switchover --force` (and run-local.sh) asks for it: POST
 * /switchover to the leader's REST API, answered once the candidate has taken over. Timed from
 * the POST itself (patronictl's and a script's start-up take seconds on a loaded machine).
 */
async function switchover(restPort: number): Promise<{ at: number; answeredMs: number }> {
  type Member = { name: string; role: string; api_url: string };
  // Under load the standby can be a plain replica for a while (Patroni names it synchronous again
  // once it has caught up), and a switchover in synchronous_mode needs a sync standby: wait for
  // one, as an operator would, up to SYNC_STANDBY_WAIT_MS.
  const deadline = Date.now() + SYNC_STANDBY_WAIT_MS;
  let members: Member[] = [];
  let from: Member | undefined;
  let to: Member | undefined;
  for (;;) {
    ({ members } = (await (await fetch(`http://127.0.0.1:${restPort}/cluster`)).json()) as { members: Member[] });
    from = members.find((m) => m.role === 'leader');
    to = members.find((m) => m.role === 'sync_standby');
    if ((from && to) || Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  if (!from || !to) throw new Error(`no leader and sync standby to switch over: ${JSON.stringify(members)}`);
  const at = performance.now();
  const res = await fetch(new URL('/switchover', from.api_url), {
    method: 'POST',
    body: JSON.stringify({ leader: from.name, candidate: to.name }),
    signal: AbortSignal.timeout(60_000),
  });
  const answeredMs = Math.round(performance.now() - at);
  console.log(`    switchover ${from.name} -> ${to.name}: ${res.status} ${(await res.text()).trim()} after ${answeredMs} ms`);
  if (!res.ok) throw new Error(`switchover refused: ${res.status}`);
  return { at, answeredMs };
}

/**
 * When haproxy marked `old` down and another node up after the fault (wall clock `faultAt`), in
 * ms from the fault, from the state changes haproxy logs with their time (haproxy.cfg.in).
 */
function haproxyTimes(dir: string, faultAt: number, old: string): { haproxyDownMs: number; haproxyUpMs: number } {
  const changes = readFileSync(path.join(dir, 'haproxy.log'), 'utf8')
    .split('\n')
    .map((l) => /^(\S+) Server baton_primary\/(\S+) is (UP|DOWN)/.exec(l))
    .filter((m) => m !== null)
    .map((m) => ({ ms: Date.parse(m[1]!) - faultAt, node: m[2]!, state: m[3]! }))
    .filter((c) => c.ms > -5_000);
  const down = changes.find((c) => c.node === old && c.state === 'DOWN');
  const up = changes.find((c) => c.node !== old && c.state === 'UP');
  return { haproxyDownMs: down ? Math.round(down.ms) : Number.NaN, haproxyUpMs: up ? Math.round(up.ms) : Number.NaN };
}

async function runOneFault(fault: HaFault, mutate: string | undefined): Promise<PatroniRun> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `baton-ha-${fault}-`));
  const base = await freePortRun(7);
  const env = {
    ...process.env,
    PG_BIN,
    HA_PG_PORT: String(base),
    HA_REST_PORT: String(base + 2),
    HA_ETCD_PORT: String(base + 4),
    HA_PORT: String(base + 6),
    HA_NODES: String(HA_SETTINGS.nodes),
    HA_TTL: String(HA_SETTINGS.ttl),
    HA_LOOP_WAIT: String(HA_SETTINGS.loopWait),
    HA_RETRY_TIMEOUT: String(HA_SETTINGS.retryTimeout),
    HA_CHECK_INTER: HA_SETTINGS.checkInter,
    HA_CHECK_FALL: String(HA_SETTINGS.checkFall),
    HA_SYNCHRONOUS_MODE: String(mutate !== 'async'),
    // The standby lags 1 s at the crash (the primary's WAL senders stopped): synchronous_mode
    // holds commits meanwhile, so nothing acknowledged may be missing; asynchronous loses them.
    HA_CRASH_LAG_MS: String(CRASH_LAG_MS),
  };
  // In its own session (setsid): a Ctrl-C to the terminal's process group reaches this process
  // only, not a run-local.sh halfway through starting or stopping the cluster.
  const inFlight = new Set<number>();
  const ha = async (cmd: string) => {
    const p = run('setsid', ['bash', SCRIPT, cmd, dir], { env, timeout: 180_000 });
    const pid = p.child.pid;
    if (pid !== undefined) inFlight.add(pid);
    try {
      return (await p).stdout.trim();
    } finally {
      if (pid !== undefined) inFlight.delete(pid);
    }
  };
  console.log(`\n=== chaos patroni fault=${fault} dir=${dir} haproxy=127.0.0.1:${base + 6}`);
  // The logs of etcd, each node and haproxy stay in `dir` when the run throws (or BATON_HA_KEEP).
  let keep = Boolean(process.env.BATON_HA_KEEP);
  let threw = false;
  // Interrupted (Ctrl-C, a CI timeout's SIGTERM): the cluster is stopped before the process
  // ends; if `down` is already under way (the finally below), the process ends once it is done.
  let stopping = false;
  let interruptedBy: NodeJS.Signals | null = null;
  const interrupted = (signal: NodeJS.Signals) => {
    interruptedBy = signal;
    console.log(`    ${signal}: stopping the cluster in ${dir}`);
    if (stopping) return;
    // A run-local.sh under way (up, crash) is ended first: it would act on the stopped cluster.
    for (const pid of inFlight) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {}
    }
    try {
      execFileSync('setsid', ['bash', SCRIPT, 'down', dir], { env, stdio: 'inherit', timeout: 60_000 });
    } finally {
      console.log(`    logs kept in ${dir}`);
      process.exit(1);
    }
  };
  process.on('SIGINT', interrupted);
  process.on('SIGTERM', interrupted);
  try {
    console.log(`    ${await ha('up')}`);
    const url = `postgres://postgres@127.0.0.1:${base + 6}/postgres`;
    let switchoverAnsweredMs: number | undefined;
    let faultAt = Number.NaN;
    let oldPrimary = '';
    const r = await runFailoverOn(mutate === 'async' ? { ...LOAD, mode: 'async' } : LOAD, {
      url,
      failover: async () => {
        oldPrimary = await ha('leader');
        if (fault === 'switchover') {
          const sw = await switchover(base + 2);
          switchoverAnsweredMs = sw.answeredMs;
          faultAt = Date.now() - (performance.now() - sw.at);
          return sw.at;
        }
        const said = await ha('crash');
        // Over once kill returns (the script's own start-up comes before the kill, not after).
        const at = performance.now();
        faultAt = Date.now();
        console.log(`    crash: ${said}`);
        return at;
      },
      newPrimaryUrl: () => url,
    });
    console.log(
      `    after: ${(await ha('list'))
        .split('\n')
        .filter((l) => /node\d/.test(l))
        .join(' / ')}`,
    );
    const violations: string[] = [];
    const zero = {
      lostEnqueues: r.lostEnqueues,
      lostOutcomes: r.lostOutcomes,
      reusedTokens: r.reusedTokens,
      staleWritesAccepted: r.staleWritesAccepted,
      unfinished: r.unfinished,
    };
    for (const [k, v] of Object.entries(zero)) if (v !== 0) violations.push(`${fault}: ${k} ${v} (must be 0)`);
    if (!Number.isFinite(r.resumeOutcomeMs) || !Number.isFinite(r.resumeEnqueueMs)) violations.push(`${fault}: did not resume`);
    if (r.listenersBack < LOAD.engines || r.presenceBack < LOAD.engines || !r.leaderBack)
      violations.push(
        `${fault}: engines not back on the new primary within 30 s: listeners ${r.listenersBack}, presence ${r.presenceBack}, leader ${r.leaderBack}`,
      );
    console.log(`    ${JSON.stringify(r)}`);
    for (const v of violations) console.log(`    VIOLATION ${v}`);
    keep ||= violations.length > 0;
    const times = haproxyTimes(dir, faultAt, oldPrimary);
    console.log(`    haproxy: ${oldPrimary} down after ${times.haproxyDownMs} ms, the new primary up after ${times.haproxyUpMs} ms`);
    return { ...r, fault, ...(switchoverAnsweredMs !== undefined && { switchoverAnsweredMs }), ...times, violations };
  } catch (err) {
    keep = true;
    threw = true;
    throw err;
  } finally {
    // `down` fails when a process started from `dir` outlives it: so does the run.
    stopping = true;
    const downFailed = await ha('down').then(
      () => null,
      (err: Error) => err,
    );
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    if (downFailed) console.log(`    down failed: ${downFailed.message}`);
    if (keep || downFailed) console.log(`    logs kept in ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
    if (interruptedBy) process.exit(1);
    // biome-ignore lint/correctness/noUnsafeFinally: a cluster left running fails the run (unless it already failed)
    if (downFailed && !threw) throw new Error(`deploy/ha down left processes behind: ${downFailed.message}`);
  }
}

/**
 * `mutate: 'async'` runs the crash with synchronous_mode off and the primary's WAL senders
 * stopped for 1 s before it: it must FAIL (acknowledged writes the standby had not received are
 * lost), showing the tier can see a loss.
 */
export async function runPatroniScenario(o: { report: boolean; mutate?: string; require?: boolean }): Promise<PatroniRunResult> {
  if (o.mutate !== undefined && o.mutate !== 'async') throw new Error(`--scenario patroni takes only --mutate async, not ${o.mutate}`);
  const skipped = haUnavailable();
  if (skipped) {
    // --require (CI, which installs the tools): a skip would pass a tier that checked nothing.
    console.log(`\n=== chaos patroni: ${o.require ? 'FAILED (--require): cannot run' : 'SKIPPED'}: ${skipped}`);
    return { ok: !o.require, skipped, runs: [] };
  }
  const runs: PatroniRun[] = [];
  // BATON_HA_FAULTS=switchover (or crash) runs one alone, for a look at its logs (BATON_HA_KEEP=1).
  const all: HaFault[] = o.mutate === 'async' ? ['crash'] : ['crash', 'switchover'];
  const faults = (process.env.BATON_HA_FAULTS?.split(',') ?? all) as HaFault[];
  for (const fault of faults) runs.push(await runOneFault(fault, o.mutate));
  const ok = runs.every((r) => r.violations.length === 0);
  console.log(ok ? '    patroni: VALID' : '    patroni: INVALID');
  if (o.report) console.log(`    report: ${writePatroniReport(runs, o.mutate === 'async').join(', ')}`);
  return { ok, skipped: null, runs };
}

const version = (cmd: string, args: string[]) => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8' }).split('\n')[0]!.trim();
  } catch {
    return 'unknown';
  }
};

/** `asyncMutation`: the --mutate async run (synchronous_mode off), which must be INVALID. */
function writePatroniReport(runs: PatroniRun[], asyncMutation: boolean): string[] {
  const root = path.join(ROOT, 'results');
  mkdirSync(root, { recursive: true });
  const at = new Date().toISOString();
  const stamp = at.replace(/[:.]/g, '-').slice(0, 19);
  const git = (args: string[]) => version('git', args);
  const machine = {
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    gitCommit: git(['rev-parse', 'HEAD']),
    loadAvg: os.loadavg().map((x) => Math.round(x * 100) / 100),
    postgres: version(`${PG_BIN}/postgres`, ['--version']),
    patroni: version('patroni', ['--version']),
    etcd: version('etcd', ['--version']),
    haproxy: version('haproxy', ['-v']),
  };
  const command = `npm run test:chaos -- --scenario patroni${asyncMutation ? ' --mutate async' : ''}`;
  const synchronousMode = !asyncMutation;
  const base = path.join(root, `chaos-patroni-${asyncMutation ? 'async-' : ''}${stamp}`);
  writeFileSync(
    `${base}.json`,
    `${JSON.stringify({ command, at, machine, settings: { ...HA_SETTINGS, synchronousMode }, load: LOAD, crashLagMs: CRASH_LAG_MS, runs }, null, 2)}\n`,
  );
  const lines = [
    `# Chaos run: failover behind Patroni and haproxy, ${at}`,
    '',
    `\`${command}\` at \`${machine.gitCommit}\`. Machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.os}, Node ${machine.node}, load average ${machine.loadAvg.join(' / ')}. ${machine.postgres}; ${machine.patroni}; ${machine.etcd}; ${machine.haproxy}.`,
    '',
    `Each run: deploy/ha/run-local.sh starts one etcd member, ${HA_SETTINGS.nodes} Patroni nodes (synchronous_mode: ${synchronousMode}; ttl ${HA_SETTINGS.ttl} s, loop_wait ${HA_SETTINGS.loopWait} s, retry_timeout ${HA_SETTINGS.retryTimeout} s) and haproxy (check GET /primary every ${HA_SETTINGS.checkInter}, fall ${HA_SETTINGS.checkFall}, on-marked-down shutdown-sessions) on this machine. ${LOAD.engines} engines with ${LOAD.slots} slots each and ${LOAD.producers} producers (one enqueue at a time) use haproxy's port only; handlers take ${LOAD.handlerMs} ms. After ${LOAD.before} acknowledged enqueues the fault; producers go on until ${LOAD.after} more are acknowledged, then every acknowledged job is looked up on the new primary. crash: the primary's WAL senders stopped (SIGSTOP) for ${CRASH_LAG_MS} ms, so the standby lags, then kill -9 of the primary node's Patroni, postmaster and backends (timed from the kill). switchover: POST /switchover to the leader's REST API naming the synchronous standby, as \`patronictl switchover --force\` does (timed from the POST; it answered after the milliseconds in the last column). haproxy down / up: when haproxy marked the old primary down and the new one up, from its log, in ms after the fault.`,
    '',
    '| fault | acknowledged enqueues | lost | acknowledged outcomes | lost (job ran again) | tokens reused | stale outcomes accepted | unfinished | first outcome after fault, ms | first enqueue after fault, ms | enqueues failed and retried | listeners / presence back | leader back | switchover answered after, ms | haproxy down / up, ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---|',
    ...runs.map(
      (r) =>
        `| ${r.fault} | ${r.acknowledgedEnqueues} | ${r.lostEnqueues} | ${r.acknowledgedOutcomes} | ${r.lostOutcomes} | ${r.reusedTokens} | ${r.staleWritesAccepted} | ${r.unfinished} | ${r.resumeOutcomeMs} | ${r.resumeEnqueueMs} | ${r.enqueueErrors} | ${r.listenersBack} / ${r.presenceBack} | ${r.leaderBack} | ${r.switchoverAnsweredMs ?? '-'} | ${r.haproxyDownMs} / ${r.haproxyUpMs} |`,
    ),
    '',
    `**Verdict: ${runs.every((r) => r.violations.length === 0) ? 'VALID' : 'INVALID'}**${asyncMutation ? ' (the mutation, synchronous_mode off, must be INVALID)' : ''}`,
    ...runs.flatMap((r) => r.violations.map((v) => `- ${v}`)),
    '',
  ];
  writeFileSync(`${base}.md`, lines.join('\n'));
  return [`${base}.json`, `${base}.md`];
}
