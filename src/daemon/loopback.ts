// The loopback rule (docs/security.md): with no credential configured the API is open, so the
// daemon may only bind an address nothing off this machine can reach.

import net from 'node:net';

/** True for 127.0.0.0/8, ::1 (also bracketed), ::ffff:127.x and the name localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  if (net.isIPv4(h)) return h.startsWith('127.');
  if (net.isIPv6(h)) return h === '::1' || /^::ffff:127\./.test(h) || h === '0:0:0:0:0:0:0:1';
  return false;
}

/** Why the daemon refuses to start open on a non-loopback HOST. */
export function openBindMessage(host: string): string {
  return (
    `HOST (--host) is ${host}, which is not a loopback address, and no credential is configured: anyone who ` +
    'can reach it could read and change every job. Set BATON_API_TOKEN (--api-token), or create a key first ' +
    '(baton keys create --role admin), or bind HOST=127.0.0.1'
  );
}
