// Cross-site request forgery guard for state-changing API requests. Any web page can
// make a browser send a "simple" cross-origin POST (text/plain, form or multipart body,
// no custom headers) and the server would act on it, token or not, if none is set. So:
// every state-changing request must be JSON-typed, which a page elsewhere can only send
// after a CORS preflight this server never grants (415 otherwise), and one that says it
// comes from another origin (Origin, or Sec-Fetch-Site: cross-site) is refused (403).

import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { parseHost, requestHost } from './allowed-hosts.ts';
import type { AppEnv } from './context.ts';
import { ApiError } from './errors.ts';
import { assertJsonContentType } from './json-body.ts';

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 };
/**
 * An origin as browsers serialise it (RFC 6454): scheme://host[:port], nothing else. Userinfo,
 * a path, a query or a fragment never come from a browser, and the URL parser would read past
 * them: `http://evil.example@127.0.0.1:8080` parses to host 127.0.0.1. Refused, not parsed.
 */
const ORIGIN_FORM = /^[a-z][a-z0-9+.-]*:\/\/[^/?#@\\\s]+$/i;

/** True when `origin` (an Origin header) names the same host and port as `host` (the Host header). */
export function isSameOrigin(origin: string, host: string): boolean {
  if (!ORIGIN_FORM.test(origin)) return false;
  let url: URL;
  try {
    // "null" (sandboxed frames, file: pages, cross-origin redirects) does not parse: foreign.
    url = new URL(origin);
  } catch {
    return false;
  }
  const defaultPort = DEFAULT_PORTS[url.protocol];
  const h = parseHost(host);
  if (defaultPort === undefined || !h) return false;
  // A Host without a port means the default port of the scheme the page used (a proxy may end TLS).
  return h.name === url.hostname && (h.port ?? defaultPort) === (url.port === '' ? defaultPort : Number(url.port));
}

/** Only requests that reach a route are guarded, so a wrong method still answers 405 and a wrong path 404. */
const reachesRoute = (c: Context): boolean => matchedRoutes(c).some((r) => r.method === c.req.method);

/** 403 FORBIDDEN_ORIGIN for a cross-origin state-changing request; 415 unless it is JSON-typed. */
export function sameOriginWrites(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!SAFE_METHODS.has(c.req.method) && reachesRoute(c)) {
      const origin = c.req.header('origin');
      if (c.req.header('sec-fetch-site') === 'cross-site') {
        throw new ApiError('FORBIDDEN_ORIGIN', 'cross-site requests may not change state (Sec-Fetch-Site: cross-site)');
      }
      if (origin !== undefined && !isSameOrigin(origin, requestHost(c))) {
        throw new ApiError(
          'FORBIDDEN_ORIGIN',
          `requests from another origin may not change state (Origin ${JSON.stringify(origin.slice(0, 100))})`,
        );
      }
      assertJsonContentType(c.req.header('content-type'));
    }
    await next();
  };
}
