// Strict JSON request bodies, checked before zod sees them: JSON content type
// (415), valid UTF-8 without BOM and well-formed JSON (400 INVALID_JSON), bounded
// nesting, no NUL characters and only finite numbers (400 INVALID_ARGUMENT).
// Runs after bodyLimit, so the bytes it reads are already bounded.

import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from './context.ts';
import { ApiError } from './errors.ts';

/** Deepest nesting accepted in a body (the payload sits two levels down). */
export const MAX_JSON_DEPTH_DEFAULT = 64;

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/;

/**
 * Checks the content type: application/json (or any +json type), and if a charset
 * is named it must be UTF-8. Throws UNSUPPORTED_MEDIA_TYPE otherwise.
 */
export function assertJsonContentType(header: string | undefined): void {
  const [media = '', ...params] = (header ?? '').split(';');
  if (!JSON_MEDIA_TYPE.test(media.trim().toLowerCase())) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
  }
  for (const p of params) {
    const [k, v] = p.split('=').map((s) => s.trim().toLowerCase());
    if (k === 'charset' && v?.replace(/"/g, '') !== 'utf-8' && v?.replace(/"/g, '') !== 'utf8') {
      throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'only charset=utf-8 is accepted');
    }
  }
}

/**
 * Walks a parsed JSON value without recursion (so a hostile 100k-deep body cannot
 * overflow the stack) and throws INVALID_ARGUMENT at the first problem, naming its path.
 */
export function assertSafeJson(value: unknown, maxDepth = MAX_JSON_DEPTH_DEFAULT): void {
  const stack: Array<[unknown, number, string]> = [[value, 0, '']];
  while (stack.length > 0) {
    const [v, depth, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) {
        throw new ApiError('INVALID_ARGUMENT', `NUL character (\\u0000) is not allowed${path ? ` in ${path}` : ''}`, { path });
      }
    } else if (typeof v === 'number') {
      // JSON.parse turns 1e309 into Infinity, which would be stored as null.
      if (!Number.isFinite(v)) {
        throw new ApiError('INVALID_ARGUMENT', `number out of range${path ? ` in ${path}` : ''}`, { path });
      }
    } else if (v !== null && typeof v === 'object') {
      if (depth >= maxDepth) {
        throw new ApiError('INVALID_ARGUMENT', `JSON nested deeper than ${maxDepth} levels`, { path, maxDepth });
      }
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], depth + 1, path ? `${path}.${i}` : String(i)]);
      } else {
        for (const [k, child] of Object.entries(v)) {
          const childPath = path ? `${path}.${k}` : k;
          if (k.includes('\u0000')) {
            throw new ApiError('INVALID_ARGUMENT', 'NUL character (\\u0000) is not allowed in a key', { path });
          }
          stack.push([child, depth + 1, childPath]);
        }
      }
    }
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Checks the content type and reads the body (bodyLimit has bounded it): undefined when it
 * is empty, else its text and value, well-formed and safe.
 */
async function readJson(c: Context<AppEnv>, maxDepth: number): Promise<{ text: string; value: unknown } | undefined> {
  assertJsonContentType(c.req.header('content-type'));
  let bytes: ArrayBuffer;
  try {
    bytes = await c.req.arrayBuffer();
  } catch (err) {
    // The connection closed before the body was in: the server's request deadline cut it
    // (it has answered 408 itself), or the client went away. Not the server's failure.
    if (c.req.raw.signal.aborted || (err as { code?: unknown } | null)?.code === 'ECONNRESET') {
      throw new ApiError('REQUEST_TIMEOUT', 'the request body did not arrive in time, or the client went away');
    }
    throw err;
  }
  if (bytes.byteLength === 0) return undefined;
  let text: string;
  try {
    // ignoreBOM keeps a BOM in the text, so JSON.parse refuses it like any stray byte.
    text = utf8.decode(bytes);
  } catch {
    throw new ApiError('INVALID_JSON', 'request body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError('INVALID_JSON', 'request body is not well-formed JSON');
  }
  assertSafeJson(value, maxDepth);
  return { text, value };
}

/**
 * Middleware for routes with a JSON body. After it, `c.req.json()` (and so zValidator)
 * sees the same text, already known to be well-formed and safe.
 */
export function jsonBody(maxDepth = MAX_JSON_DEPTH_DEFAULT): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const body = await readJson(c, maxDepth);
    if (!body) throw new ApiError('INVALID_JSON', 'request body is empty; a JSON document is required');
    // hono caches body reads as promises (its type says string); reuse the checked text.
    c.req.bodyCache.text = Promise.resolve(body.text) as unknown as string;
    await next();
  };
}

/**
 * Middleware for POST routes that take no body (cancel, replay, DLQ replay). They still
 * require the JSON content type (see same-origin.ts); the body may be empty or `{}`, and
 * anything else is refused, so parameters sent in the body by mistake are not ignored.
 */
export function noBody(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const body = await readJson(c, MAX_JSON_DEPTH_DEFAULT);
    const v = body?.value;
    if (body && !(v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0)) {
      throw new ApiError('INVALID_ARGUMENT', 'this route takes no body: send none, or {}');
    }
    await next();
  };
}
