// Child processes of the harness (workers, producers) run under tsx and talk to the
// parent over IPC with typed messages; any message can be awaited with a deadline.

import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface Msg {
  type: string;
  [k: string]: unknown;
}

export class Child {
  readonly proc: ChildProcess;
  private readonly inbox: Msg[] = [];
  private waiters: Array<{ type: string; resolve: (m: Msg) => void; reject: (e: Error) => void }> = [];
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private stderrTail = '';

  constructor(script: string, env: Record<string, string> = {}) {
    const file = fileURLToPath(new URL(script, import.meta.url));
    // BENCH_CPU_PROF=dir: every child writes a V8 CPU profile there (node --cpu-prof).
    const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF] : [];
    this.proc = spawn(process.execPath, [...prof, '--import', 'tsx', file], {
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      env: { ...process.env, ...env },
    });
    this.proc.stderr?.on('data', (b: Buffer) => {
      this.stderrTail = (this.stderrTail + b.toString()).slice(-4000);
      if (process.env.BENCH_DEBUG) process.stderr.write(b);
    });
    this.proc.on('message', (m: Msg) => {
      if (m.type === 'fatal') {
        const err = new Error(`child ${script} failed: ${String(m.message)}`);
        for (const w of this.waiters) w.reject(err);
        this.waiters = [];
        return;
      }
      const i = this.waiters.findIndex((w) => w.type === m.type);
      if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(m);
      else this.inbox.push(m);
    });
    this.exited = new Promise((resolve) => {
      this.proc.on('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        const err = new Error(
          `child ${script} exited (code ${code}, signal ${signal}) ${this.stderrTail.trim().split('\n').slice(-8).join('\n')}`,
        );
        for (const w of this.waiters) w.reject(err);
        this.waiters = [];
        resolve({ code, signal });
      });
    });
  }

  send(msg: Msg): void {
    this.proc.send(msg);
  }

  /** Resolves with the next message of `type`; rejects on timeout or if the child dies first. */
  waitFor<T = Msg>(type: string, timeoutMs: number): Promise<T> {
    const i = this.inbox.findIndex((m) => m.type === type);
    if (i >= 0) return Promise.resolve(this.inbox.splice(i, 1)[0] as unknown as T);
    if (this.exitInfo) {
      return Promise.reject(new Error(`child already exited (code ${this.exitInfo.code}): ${this.stderrTail.slice(-1000)}`));
    }
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for "${type}"`));
      }, timeoutMs);
      const done = (m: Msg) => {
        clearTimeout(timer);
        resolve(m as unknown as T);
      };
      this.waiters.push({
        type,
        resolve: done,
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  }

  /** Ends the child: asks politely, then SIGKILL after `graceMs`. */
  async end(graceMs = 5_000): Promise<void> {
    if (this.exitInfo) return;
    try {
      this.proc.send({ type: 'exit' });
    } catch {
      /* channel closed */
    }
    const t = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(t);
  }
}
