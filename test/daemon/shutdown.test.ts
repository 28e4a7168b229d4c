// The shutdown sequencer without a process to kill: a fake clock and a recorded
// exit show which repeated requests join the running drain and which force exit.

import { describe, expect, it } from 'vitest';
import { noopLogger } from '../../src/core/logger.ts';
import { EXIT_FORCED, EXIT_OK, installShutdown, REPEAT_SIGNAL_WINDOW_MS } from '../../src/daemon/shutdown.ts';
import { deferred } from '../helpers/wait.ts';

/** A shutdown whose single step runs until `release` is resolved. */
function drainingShutdown() {
  let now = 1_000_000;
  const exits: number[] = [];
  const release = deferred();
  const shutdown = installShutdown({
    logger: noopLogger,
    forceAfterMs: 60_000,
    exit: (code) => void exits.push(code),
    now: () => now,
    signals: [],
  });
  shutdown.add({ order: 20, name: 'drain', run: () => release.promise });
  return { shutdown, exits, release, advance: (ms: number) => (now += ms) };
}

describe('installShutdown', () => {
  it('a repeat within the window is the same request: the drain finishes and the exit is orderly', async () => {
    const { shutdown, exits, release, advance } = drainingShutdown();
    shutdown.trigger('SIGINT');
    // What a terminal Ctrl-C under `npm start` delivers: the tty's SIGINT and npm's forwarded one.
    advance(2);
    shutdown.trigger('SIGINT');
    advance(REPEAT_SIGNAL_WINDOW_MS - 3);
    shutdown.trigger('SIGTERM');
    expect(exits).toEqual([]);
    release.resolve();
    expect(await shutdown.done).toBe(EXIT_OK);
    expect(exits).toEqual([EXIT_OK]);
  });

  it('a repeat once the window has passed forces exit', () => {
    const { shutdown, exits, advance } = drainingShutdown();
    shutdown.trigger('SIGTERM');
    advance(REPEAT_SIGNAL_WINDOW_MS);
    shutdown.trigger('SIGTERM');
    expect(exits).toEqual([EXIT_FORCED]);
  });
});
