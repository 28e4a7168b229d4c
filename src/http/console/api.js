// The JSON API as the page calls it (docs/http-api.md): the key it sends, its errors, and
// the two ways the page tells the user how a call went (the flash and the status line).

import { $ } from './util.js';

// Where earlier versions kept the token; cleared, so no key outlives the page (docs/security.md).
const LEGACY_TOKEN_KEY = 'baton.apiToken';

// The API key lives in this variable only: gone when the page is closed or reloaded.
let token = '';
try {
  localStorage.removeItem(LEGACY_TOKEN_KEY);
} catch {
  /* storage disabled */
}

/** Sends `key` (an API key or the admin token) on every call from now on; '' sends none. */
export function useKey(key) {
  token = key;
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
  toString() {
    return `${this.status} ${this.code}: ${this.message}`;
  }
}

export async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  // Every POST is JSON-typed, also those without a body: the server refuses others (CSRF guard).
  if (method !== 'GET') headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new ApiError(0, 'NETWORK', `cannot reach the server (${err.message})`);
  }
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  if (!res.ok) {
    const e = data?.error ? data.error : { code: `HTTP_${res.status}`, message: text.slice(0, 200) || res.statusText };
    if (res.status === 401) $('token-box').classList.add('show');
    throw new ApiError(res.status, e.code, e.message);
  }
  return data;
}

// Fleet-wide reads: a tenant key gets 403 ADMIN_REQUIRED, and the page shows its tenant's views only.
export const fleetWide = (p) =>
  p.catch((err) => {
    if (err instanceof ApiError && err.code === 'ADMIN_REQUIRED') return null;
    throw err;
  });

export function flash(kind, text) {
  const el = $('flash');
  el.className = `show ${kind}`;
  el.dataset.kind = kind;
  el.textContent = text;
  clearTimeout(flash.t);
  flash.t = setTimeout(
    () => {
      el.className = '';
      el.textContent = '';
      delete el.dataset.kind;
    },
    kind === 'error' ? 12000 : 5000,
  );
}

export function setStatus(ok, text) {
  const el = $('status');
  el.textContent = text;
  el.className = ok ? '' : 'error';
  el.dataset.status = ok ? 'ok' : 'error';
}
