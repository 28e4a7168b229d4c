// Ending a side connection (presence, LISTEN) in whatever state it is in, in bounded time.

import type pg from 'pg';

/** How long to wait for a polite goodbye before the socket is destroyed. */
const END_GRACE_MS = 1_000;

/**
 * Ends a client whatever state it is in, within END_GRACE_MS: a goodbye sent on a dead
 * socket is never answered, so after the grace the socket is destroyed. Never rejects.
 */
export async function endClient(client: pg.Client): Promise<void> {
  client.removeAllListeners('notification');
  client.removeAllListeners('end');
  client.removeAllListeners('error');
  client.on('error', () => undefined);
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), END_GRACE_MS);
  });
  const ended = await Promise.race([
    client.end().then(
      () => true,
      () => true,
    ),
    graceOver,
  ]);
  clearTimeout(timer);
  // pg keeps its socket on `connection.stream` (not in its typings).
  if (!ended) (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}
