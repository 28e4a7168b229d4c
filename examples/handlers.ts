// Example handler module for the daemon: BATON_HANDLERS=./examples/handlers.ts npm start
// Export `handlers` (or a default export): an object mapping job type -> handler.
// Handlers run at least once per job, so they must be idempotent; ctx.token is a
// fencing token you can pass downstream as an idempotency key.
// In your own project import the types from the package ('baton-queue') instead of ../src.

import { type Handler, type HandlerMap, TerminalError } from '../src/index.ts';

interface GreetPayload {
  name?: unknown;
}

/** Returns a greeting; a payload without a string `name` can never succeed, so it is terminal. */
const greet: Handler<GreetPayload | null> = (ctx) => {
  const name = ctx.payload?.name;
  if (typeof name !== 'string' || name.length === 0) {
    throw new TerminalError('greet: payload.name must be a non-empty string');
  }
  return { greeting: `Hello, ${name}!`, attempt: ctx.job.attempt };
};

/** Calls an HTTP endpoint; network errors are transient (retried with backoff), 4xx are terminal. */
const webhook: Handler<{ url?: unknown; body?: unknown } | null> = async (ctx) => {
  const url = ctx.payload?.url;
  if (typeof url !== 'string') throw new TerminalError('webhook: payload.url must be a string');
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `baton-${ctx.job.id}` },
    body: JSON.stringify(ctx.payload?.body ?? {}),
    signal: ctx.signal, // aborted when the lease is lost or the drain deadline passes
  });
  if (res.status >= 400 && res.status < 500) throw new TerminalError(`webhook: ${url} answered ${res.status}`);
  if (!res.ok) throw new Error(`webhook: ${url} answered ${res.status}`);
  return { status: res.status };
};

export const handlers: HandlerMap = { greet, webhook };
