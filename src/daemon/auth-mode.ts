// Whether the daemon's API is open: with no BATON_API_TOKEN, on loopback, it is open while no
// API key is active. Creating the first key (baton keys create, POST /api/keys, from any
// process) closes it under running clients, and revoking the last opens it again; this
// watches for either and reports it, so the log says when the API's rules changed.

import type { ApiKeys } from '../index.ts';

export interface AuthModeWatch {
  stop(): void;
}

export interface AuthModeOptions {
  apiKeys: ApiKeys;
  /** Whether the API is open now (no active key). */
  open: boolean;
  /** Called once per change: true when it opened, false when it closed. */
  onChange(open: boolean): void;
  /** How often to look. Default the key cache time (a change takes effect within it anyway). */
  intervalMs?: number;
}

export function watchAuthMode(opts: AuthModeOptions): AuthModeWatch {
  let open = opts.open;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const look = async (): Promise<void> => {
    try {
      const now = !(await opts.apiKeys.anyActive());
      if (!stopped && now !== open) {
        open = now;
        opts.onChange(open);
      }
    } catch {
      // The database is away: nothing changed that we know of; look again next time.
    }
    if (!stopped) {
      timer = setTimeout(look, opts.intervalMs ?? opts.apiKeys.cacheMs);
      timer.unref();
    }
  };
  timer = setTimeout(look, opts.intervalMs ?? opts.apiKeys.cacheMs);
  timer.unref();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
