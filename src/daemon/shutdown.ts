// Maps SIGTERM/SIGINT to an orderly shutdown: the steps run in order (stop
// accepting HTTP, drain jobs, close the server, stop the embedded database) and
// the process exits 0. It says which steps it runs: only those of what came up. A repeat after REPEAT_SIGNAL_WINDOW_MS, or the watchdog, forces exit.

import type { Logger } from '../core/logger.ts';

export interface ShutdownStep {
  /** Lower runs first; see SHUTDOWN_ORDER. */
  order: number;
  name: string;
  run(): Promise<void>;
}

/** The order of the orderly path: HTTP stops accepting, jobs drain, then the rest closes. */
export const SHUTDOWN_ORDER = { stopAccepting: 10, drain: 20, closeHttp: 30, database: 40 } as const;

export interface ShutdownOptions {
  logger: Logger;
  /** Force exit when the orderly path takes longer than this (drain time plus slack). */
  forceAfterMs: number;
  /** Synchronous last rites before a forced exit (e.g. signal the embedded PostgreSQL). */
  onForce?: () => void;
  /** Defaults to process.exit. */
  exit?: (code: number) => void;
  /** Milliseconds clock for the repeat window. Defaults to Date.now. */
  now?: () => number;
  /** Signals mapped to trigger(). Defaults to SIGTERM and SIGINT. */
  signals?: readonly NodeJS.Signals[];
}

/**
 * Requests this soon after the first are the same request, not "force". One Ctrl-C
 * often arrives twice within milliseconds: the terminal signals the whole process
 * group and a launcher in it (npm) forwards its copy to the daemon as well.
 */
export const REPEAT_SIGNAL_WINDOW_MS = 2_000;

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
/** Bad configuration or usage: nothing was started. */
export const EXIT_CONFIG = 2;
/** Conventional 128 + SIGINT: the operator insisted. */
export const EXIT_FORCED = 130;

export interface Shutdown {
  /** Registers a step as its resource comes up; steps run sorted by `order`. */
  add(step: ShutdownStep): void;
  /** Starts the orderly shutdown (also what the signals do). A repeat forces once REPEAT_SIGNAL_WINDOW_MS has passed. */
  trigger(reason: string, code?: number): void;
  /** Resolves when the orderly path has finished (just before exit). */
  readonly done: Promise<number>;
}

export function installShutdown(opts: ShutdownOptions): Shutdown {
  const exit = opts.exit ?? ((code: number) => process.exit(code));
  const now = opts.now ?? Date.now;
  const log = opts.logger;
  let startedAt: number | undefined;
  const steps: ShutdownStep[] = [];
  let resolveDone!: (code: number) => void;
  const done = new Promise<number>((r) => (resolveDone = r));

  const force = (why: string): void => {
    log.error({ why }, 'forced exit: in-flight jobs may be retried after their leases expire');
    try {
      opts.onForce?.();
    } finally {
      exit(EXIT_FORCED);
    }
  };

  const signals = opts.signals ?? ['SIGTERM', 'SIGINT'];
  const orderly = async (reason: string, requested: number): Promise<void> => {
    // Only the steps of what came up: a start-up that failed before the workers ran drains nothing.
    const names = [...steps].sort((a, b) => a.order - b.order).map((s) => s.name);
    const hint = (signals as readonly string[]).includes(reason)
      ? ` (signal again after ${REPEAT_SIGNAL_WINDOW_MS / 1000} s to force)`
      : '';
    log.info({ reason, steps: names }, `shutting down${names.length > 0 ? `: ${names.join(', ')}` : ''}${hint}`);
    const watchdog = setTimeout(() => force(`shutdown took longer than ${opts.forceAfterMs} ms`), opts.forceAfterMs);
    watchdog.unref();
    let code = requested;
    for (const step of [...steps].sort((a, b) => a.order - b.order)) {
      const t0 = Date.now();
      try {
        await step.run();
        log.debug({ step: step.name, ms: Date.now() - t0 }, 'shutdown step done');
      } catch (err) {
        code = EXIT_FAILED;
        log.error({ step: step.name, err }, 'shutdown step failed');
      }
    }
    clearTimeout(watchdog);
    log.info({ code }, 'stopped');
    resolveDone(code);
    exit(code);
  };

  const trigger = (reason: string, code = EXIT_OK): void => {
    if (startedAt === undefined) {
      startedAt = now();
      void orderly(reason, code);
    } else if (now() - startedAt < REPEAT_SIGNAL_WINDOW_MS) {
      log.info({ reason }, 'shutdown already in progress; this repeat is taken as the same request');
    } else {
      force(`second request (${reason})`);
    }
  };

  for (const signal of signals) process.on(signal, () => trigger(signal));
  return { add: (step) => void steps.push(step), trigger, done };
}
