// The Host check against DNS rebinding: a page on an attacker's name that later
// resolves to this server sends its requests with that name as Host. Only names
// this server is known by get an answer; an IP literal or a loopback name can
// never be an attacker's DNS name, so they are what a wildcard bind accepts.

import { isIP } from 'node:net';
import type { Context, MiddlewareHandler } from 'hono';
import { z } from 'zod';
import type { AppEnv } from './context.ts';
import { ApiError } from './errors.ts';

/** A Host header (or an allowed-hosts entry): canonical name, and the port if one was given. */
export interface HostPort {
  /** Lower case; IPv4 in dotted form; IPv6 compressed and in brackets, as in a URL. */
  name: string;
  port: number | undefined;
}

/** Where the server listens: the bind host as configured (an address, a name, or a wildcard) and its port. */
export interface ListenAddress {
  host: string;
  port: number;
}

const HOST_HEADER = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(?::(\d{1,5}))?$/;
const LOOPBACK_NAMES: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);
const WILDCARD_ADDRESSES: ReadonlySet<string> = new Set(['0.0.0.0', '[::]']);
/** Paths that answer whatever the Host: probes send the pod IP, a service name or anything. */
export const HOST_CHECK_EXEMPT_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

/** Parses `name` or `name:port` (IPv6 in brackets); undefined for anything else. */
export function parseHost(value: string | undefined): HostPort | undefined {
  const m = value === undefined ? null : HOST_HEADER.exec(value);
  if (!m) return undefined;
  const port = m[2] === undefined ? undefined : Number(m[2]);
  if (port !== undefined && port > 65_535) return undefined;
  try {
    // The URL parser canonicalises the name, so 127.1, LOCALHOST and [0::1] compare as they resolve.
    return { name: new URL(`http://${m[1]!}/`).hostname, port };
  } catch {
    return undefined;
  }
}

/**
 * The request's Host header; without one (an app driven in process, e.g. app.request), the
 * host of its URL, which a server adapter builds from Host. A browser always sends Host.
 */
export function requestHost(c: Context): string {
  return c.req.header('host') ?? new URL(c.req.url).host;
}

const isIpLiteral = (name: string): boolean => isIP(name.replace(/^\[(.*)\]$/, '$1')) !== 0;

/** A bind host as a canonical name: a bare IPv6 address gets its brackets. */
function bindName(host: string): string | undefined {
  return parseHost(isIP(host) === 6 ? `[${host}]` : host)?.name;
}

/** Validates allowed-hosts entries (`name` or `name:port`); throws a plain Error naming the first bad one. */
export function parseAllowedHosts(entries: readonly string[]): HostPort[] {
  return entries.map((e) => {
    const h = parseHost(e.trim());
    if (!h) throw new Error(`${JSON.stringify(e)} is not a host name, IP address or host:port`);
    return h;
  });
}

/** BATON_ALLOWED_HOSTS: a comma list of `name` / `name:port`, or `*` (no Host check). */
export const allowedHostsSetting = z.string().transform((raw, ctx): string[] | '*' => {
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.includes('*')) return '*';
  try {
    parseAllowedHosts(entries);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
    return z.NEVER;
  }
  return entries;
});

/**
 * True when a request with Host `host` may be answered. Accepted: an allowed entry (any port
 * unless the entry names one); the bind host or a loopback name on the bound port; with a
 * wildcard bind, any IP literal on the bound port; and while the listen address is unknown
 * (an app not yet listening, or driven in process), loopback names and IP literals on any port.
 */
export function isAllowedHost(host: HostPort, allowed: readonly HostPort[], listen: ListenAddress | undefined): boolean {
  if (allowed.some((a) => a.name === host.name && (a.port === undefined || a.port === (host.port ?? 80)))) return true;
  const local = LOOPBACK_NAMES.has(host.name);
  if (!listen) return local || isIpLiteral(host.name);
  if ((host.port ?? 80) !== listen.port) return false;
  const bound = bindName(listen.host);
  if (bound !== undefined && WILDCARD_ADDRESSES.has(bound)) return local || isIpLiteral(host.name);
  return local || host.name === bound;
}

/** 421 HOST_NOT_ALLOWED for a Host this server is not known by (see isAllowedHost). */
export function hostCheck(allowedHosts: readonly string[], listenOn: () => ListenAddress | undefined): MiddlewareHandler<AppEnv> {
  const allowed = parseAllowedHosts(allowedHosts);
  return async (c, next) => {
    if (!HOST_CHECK_EXEMPT_PATHS.has(c.req.path)) {
      const raw = requestHost(c);
      const host = parseHost(raw);
      if (!host || !isAllowedHost(host, allowed, listenOn())) {
        throw new ApiError('HOST_NOT_ALLOWED', `this server does not answer to Host ${JSON.stringify(raw.slice(0, 100))}`);
      }
    }
    await next();
  };
}
