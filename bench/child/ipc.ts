// Child side of the harness IPC: wait for messages by type, report results, turn any
// error into a 'fatal' message so the parent fails the run instead of hanging.

import type { Msg } from '../proc.ts';

const inbox: Msg[] = [];
const waiters: Array<{ type: string; resolve: (m: Msg) => void }> = [];

process.on('message', (m: Msg) => {
  if (m.type === 'exit') process.exit(0);
  const i = waiters.findIndex((w) => w.type === m.type);
  if (i >= 0) waiters.splice(i, 1)[0]!.resolve(m);
  else inbox.push(m);
});
process.on('disconnect', () => process.exit(0));

export function next<T extends Msg = Msg>(type: string): Promise<T> {
  const i = inbox.findIndex((m) => m.type === type);
  if (i >= 0) return Promise.resolve(inbox.splice(i, 1)[0] as T);
  return new Promise((resolve) => waiters.push({ type, resolve: resolve as (m: Msg) => void }));
}

export function send(m: Msg): void {
  process.send?.(m);
}

/** Runs `main` on the first 'run' message; reports failure as 'fatal'. */
export function serve(main: (run: Msg) => Promise<void>): void {
  send({ type: 'booted' });
  next('run')
    .then(main)
    .catch((err: unknown) => {
      send({ type: 'fatal', message: err instanceof Error ? `${err.message}\n${err.stack ?? ''}` : String(err) });
      setTimeout(() => process.exit(1), 200);
    });
}

export { until } from '../until.ts';
