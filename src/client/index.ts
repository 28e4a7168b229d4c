// The typed RPC client: hc<AppType> over the HTTP API. Every route, body and
// response type comes from the server's route definitions (a type-only import).

/**
 * The typed client of Baton's HTTP API (`baton-queue/client`): createClient and the types of
 * every route, status and error body, from the server's own route definitions.
 *
 * @packageDocumentation
 */
import { hc } from 'hono/client';
import type { AppType } from '../http/app.ts';

export type { InferRequestType, InferResponseType } from 'hono/client';
export type { AppType } from '../http/app.ts';
export type { ApiErrorBody, ApiErrorCode } from '../http/errors.ts';

/** Options of createClient: the bearer token, a fetch implementation, extra headers. */
export interface ClientOptions {
  /**
   * Sent as `Authorization: Bearer <token>` on every request: `BATON_API_TOKEN` or an API key.
   * Needed once the daemon has a token or any API key (it answers 401 UNAUTHORIZED without);
   * undefined sends none.
   */
  token?: string | undefined;
  /** A fetch implementation (tests, proxies, custom agents). Default: global fetch. */
  fetch?: typeof fetch;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

/**
 * Gives every state-changing request the JSON content type, also those without a body
 * (cancel, replay, DLQ replay): the server refuses others, as a page on another origin
 * could send them (415 UNSUPPORTED_MEDIA_TYPE).
 */
function withJsonContentType(f: typeof fetch): typeof fetch {
  return (input, init) => {
    const method = (init?.method ?? 'GET').toUpperCase();
    if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return f(input, init);
    const headers = new Headers(init?.headers);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    return f(input, { ...init, headers });
  };
}

/**
 * hc puts path parameters into the URL as they are, so a queue named `emails/eu` would
 * address another route. This wraps hc's proxy so every call's `param` values go
 * percent-encoded (the server decodes them), keeping its types as they are.
 */
function encodingParams<T extends object>(target: T): T {
  return new Proxy(target, {
    get: (t, key) => {
      const v = Reflect.get(t, key) as unknown;
      return (typeof v === 'function' || (typeof v === 'object' && v !== null)) && typeof key === 'string' ? encodingParams(v) : v;
    },
    apply: (t, self, args: unknown[]) => {
      const [first, ...rest] = args;
      const param = (first as { param?: Record<string, unknown> } | undefined)?.param;
      if (!param) return Reflect.apply(t as (...a: unknown[]) => unknown, self, args);
      const encoded = Object.fromEntries(Object.entries(param).map(([k, v]) => [k, encodeURIComponent(String(v))]));
      return Reflect.apply(t as (...a: unknown[]) => unknown, self, [{ ...(first as object), param: encoded }, ...rest]);
    },
  });
}

// Named rather than inferred: the declarations in dist/ then refer to AppType instead of
// spelling out every route (10,000 lines, whose unions tsc orders differently from build to build).
/** The typed client createClient returns: one method per route of the HTTP API, typed per status. */
export type BatonClient = ReturnType<typeof hc<AppType>>;

/**
 * Creates a client for a Baton daemon at `baseUrl` (e.g. `http://127.0.0.1:8080`).
 * Example: `const res = await client.api.jobs.$post({ json: { jobType: 'noop' } })`. Each
 * answer is typed per status, errors included (`if (!res.ok)` or `res.status === 401`
 * narrows `res.json()` to ApiErrorBody), so check the status before reading the body.
 */
export function createClient(baseUrl: string, opts: ClientOptions = {}): BatonClient {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  // Global fetch looked up per call, so a fetch replaced after the client was made is used.
  return encodingParams(hc<AppType>(baseUrl, { headers, fetch: withJsonContentType(opts.fetch ?? ((input, init) => fetch(input, init))) }));
}
