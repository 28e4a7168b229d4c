// What a web page elsewhere can make a browser send must not change state: simple
// cross-origin POSTs (text/plain, no Origin check) and DNS rebinding (a foreign Host).
// Each attack answers 4xx and the row it aimed at is unchanged; same-origin requests,
// the typed client and the console's way of calling still work.

import { describe, expect, it } from 'vitest';
import { isAllowedHost, type ListenAddress, parseAllowedHosts, parseHost } from '../../src/http/allowed-hosts.ts';
import { createApp } from '../../src/http/app.ts';
import { isSameOrigin } from '../../src/http/same-origin.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { insertJob } from '../helpers/factory.ts';
import { type ApiHarness, badInputHelpers, countJobs, JSON_HEADERS, requestWithHost, useApi } from './harness.ts';

const db = useTestDatabase();
const api = useApi(db);
const at = (h: ApiHarness) => Number(new URL(h.url).port);

const { expectError } = badInputHelpers(db, () => api);
const EVIL = { origin: 'http://evil.example', 'content-type': 'text/plain' };
const stateOf = async (id: string) =>
  (await db.query<{ state: string }>('SELECT state FROM baton.jobs WHERE id = $1', [id])).rows[0]!.state;

/** A request to the server on port `to` with any Host header. */
const withHost = (host: string, path: string, method = 'GET', headers: Record<string, string> = {}, to = at(api)): Promise<Response> =>
  requestWithHost(`http://127.0.0.1:${to}`, host, path, method, headers);

describe('cross-origin simple requests (CSRF)', () => {
  it('POST /api/jobs/:id/cancel from http://evil.example with text/plain -> 403 FORBIDDEN_ORIGIN, job still pending', async () => {
    const id = await insertJob(db.pool, { jobType: 'csrf' });
    await expectError(await api.raw(`/api/jobs/${id}/cancel`, { method: 'POST', headers: EVIL, body: '' }), 403, 'FORBIDDEN_ORIGIN');
    expect(await stateOf(id)).toBe('pending');
  });

  it('POST /api/dlq/replay and /api/jobs/:id/replay from http://evil.example -> 403, dead letters stay dead', async () => {
    const id = await insertJob(db.pool, { state: 'dead_lettered', jobType: 'csrf', queue: 'csrf-dlq' });
    await expectError(await api.raw('/api/dlq/replay', { method: 'POST', headers: EVIL, body: 'x' }), 403, 'FORBIDDEN_ORIGIN');
    await expectError(await api.raw(`/api/jobs/${id}/replay`, { method: 'POST', headers: EVIL }), 403, 'FORBIDDEN_ORIGIN');
    expect(await stateOf(id)).toBe('dead_lettered');
  });

  it.each([
    ['another host', { origin: 'http://evil.example' }],
    ['the same host on another port', { origin: 'http://127.0.0.1:1' }],
    ['another scheme on the default port', { origin: 'https://127.0.0.1' }],
    ['an opaque origin ("null")', { origin: 'null' }],
    ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
  ])('a JSON request from %s -> 403 on every state-changing route, nothing written', async (_name, headers) => {
    const pending = await insertJob(db.pool, { jobType: 'csrf' });
    const dead = await insertJob(db.pool, { state: 'dead_lettered', jobType: 'csrf', queue: 'csrf-json' });
    const before = await countJobs(db);
    const h = { ...JSON_HEADERS, ...headers };
    const body = '{"jobType":"csrf"}';
    await expectError(await api.raw('/api/jobs', { method: 'POST', headers: h, body }), 403, 'FORBIDDEN_ORIGIN');
    await expectError(
      await api.raw('/api/jobs/batch', { method: 'POST', headers: h, body: `{"jobs":[${body}]}` }),
      403,
      'FORBIDDEN_ORIGIN',
    );
    await expectError(await api.raw(`/api/jobs/${pending}/cancel`, { method: 'POST', headers: h }), 403, 'FORBIDDEN_ORIGIN');
    await expectError(await api.raw(`/api/jobs/${dead}/replay`, { method: 'POST', headers: h }), 403, 'FORBIDDEN_ORIGIN');
    await expectError(await api.raw('/api/dlq/replay?queue=csrf-json', { method: 'POST', headers: h }), 403, 'FORBIDDEN_ORIGIN');
    expect(await countJobs(db)).toBe(before);
    expect([await stateOf(pending), await stateOf(dead)]).toEqual(['pending', 'dead_lettered']);
  });

  it.each([
    ['text/plain', { 'content-type': 'text/plain' }],
    ['a form', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['multipart', { 'content-type': 'multipart/form-data; boundary=x' }],
    ['no content type', {} as Record<string, string>],
  ])('cancel, replay and DLQ replay with %s and no Origin -> 415, nothing changed', async (_name, headers) => {
    const pending = await insertJob(db.pool, { jobType: 'ct' });
    const dead = await insertJob(db.pool, { state: 'dead_lettered', jobType: 'ct', queue: 'ct-dlq' });
    await expectError(await api.raw(`/api/jobs/${pending}/cancel`, { method: 'POST', headers }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    await expectError(await api.raw(`/api/jobs/${dead}/replay`, { method: 'POST', headers }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    await expectError(await api.raw('/api/dlq/replay?queue=ct-dlq', { method: 'POST', headers }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect([await stateOf(pending), await stateOf(dead)]).toEqual(['pending', 'dead_lettered']);
  });

  it('a same-origin request the way the console sends it works: JSON type, no body or {}', async () => {
    const pending = await insertJob(db.pool, { jobType: 'console' });
    const dead = await insertJob(db.pool, { state: 'dead_lettered', jobType: 'console', queue: 'console-dlq' });
    const h = { ...JSON_HEADERS, origin: api.url, 'sec-fetch-site': 'same-origin' };
    expect((await api.raw(`/api/jobs/${pending}/cancel`, { method: 'POST', headers: h })).status).toBe(200);
    expect((await api.raw(`/api/jobs/${dead}/replay`, { method: 'POST', headers: h, body: '{}' })).status).toBe(200);
    expect([await stateOf(pending), await stateOf(dead)]).toEqual(['cancelled', 'pending']);
    const created = await api.raw('/api/jobs', { method: 'POST', headers: h, body: '{"jobType":"console"}' });
    expect(created.status).toBe(201);
    const replayed = await api.raw('/api/dlq/replay?queue=console-dlq', {
      method: 'POST',
      headers: { ...h, origin: api.url.replace('127.0.0.1', 'LOCALHOST') },
    });
    expect(replayed.status).toBe(403); // another name for the same machine is another origin
  });

  it('an Origin with userinfo naming this very server (http://evil.example@127.0.0.1:PORT) -> 403, nothing written', async () => {
    // The URL parser reads it as host 127.0.0.1 on this port; no browser sends one, so it is refused unread.
    const pending = await insertJob(db.pool, { jobType: 'userinfo' });
    const before = await countJobs(db);
    for (const origin of [`http://evil.example@127.0.0.1:${at(api)}`, `http://u:p@127.0.0.1:${at(api)}`, `http://@127.0.0.1:${at(api)}`]) {
      const h = { ...JSON_HEADERS, origin };
      await expectError(
        await api.raw('/api/jobs', { method: 'POST', headers: h, body: '{"jobType":"userinfo"}' }),
        403,
        'FORBIDDEN_ORIGIN',
      );
      await expectError(await api.raw(`/api/jobs/${pending}/cancel`, { method: 'POST', headers: h }), 403, 'FORBIDDEN_ORIGIN');
    }
    expect(await countJobs(db)).toBe(before);
    expect(await stateOf(pending)).toBe('pending');
  });

  it('an Origin must be scheme://host[:port] as browsers send it: userinfo, paths, queries are refused', () => {
    const host = '127.0.0.1:8080';
    expect(isSameOrigin('http://127.0.0.1:8080', host)).toBe(true);
    expect(isSameOrigin('HTTP://127.0.0.1:8080', host)).toBe(true);
    for (const bad of [
      'http://evil.example@127.0.0.1:8080',
      'http://user:pass@127.0.0.1:8080',
      'http://127.0.0.1:8080/',
      'http://127.0.0.1:8080/path',
      'http://127.0.0.1:8080?x=1',
      'http://127.0.0.1:8080#f',
      'http://evil.example\\@127.0.0.1:8080',
      ' http://127.0.0.1:8080',
    ]) {
      expect(isSameOrigin(bad, host), bad).toBe(false);
    }
  });

  it('routes without a body refuse one other than {}, so a parameter sent there is not ignored', async () => {
    const dead = await insertJob(db.pool, { state: 'dead_lettered', jobType: 'body', queue: 'body-dlq' });
    for (const body of ['{"limit":1}', '[]', 'null', '""']) {
      await expectError(
        await api.raw('/api/dlq/replay?queue=body-dlq', { method: 'POST', headers: JSON_HEADERS, body }),
        400,
        'INVALID_ARGUMENT',
      );
    }
    await expectError(
      await api.raw('/api/dlq/replay?queue=body-dlq', { method: 'POST', headers: JSON_HEADERS, body: '{' }),
      400,
      'INVALID_JSON',
    );
    expect(await stateOf(dead)).toBe('dead_lettered');
  });

  it('the typed client sends the JSON type on bodyless POSTs', async () => {
    const pending = await insertJob(db.pool, { jobType: 'client' });
    const res = await api.client.api.jobs[':id'].cancel.$post({ param: { id: pending } });
    expect(res.status).toBe(200);
    expect(await stateOf(pending)).toBe('cancelled');
  });
});

describe('Host check (DNS rebinding)', () => {
  it('a foreign Host -> 421 HOST_NOT_ALLOWED on every route but the health checks, and changes nothing', async () => {
    const id = await insertJob(db.pool, { jobType: 'rebind' });
    const host = `evil.example:${at(api)}`;
    await expectError(await withHost(host, `/api/jobs/${id}/cancel`, 'POST', JSON_HEADERS), 421, 'HOST_NOT_ALLOWED');
    for (const path of ['/api/queues', `/api/jobs/${id}`, '/metrics', '/', '/console/main.js', '/api/nope']) {
      await expectError(await withHost(host, path), 421, 'HOST_NOT_ALLOWED');
    }
    expect(await stateOf(id)).toBe('pending');
    expect((await withHost(host, '/healthz')).status).toBe(200);
    expect((await withHost(host, '/readyz')).status).toBe(200);
  });

  it('bound to 127.0.0.1: its address and the loopback names on its port pass; other ports and addresses do not', async () => {
    for (const ok of [`127.0.0.1:${at(api)}`, `localhost:${at(api)}`, `LocalHost:${at(api)}`, `[::1]:${at(api)}`]) {
      expect((await withHost(ok, '/api/queues')).status, ok).toBe(200);
    }
    for (const bad of [`localhost:${at(api) + 1}`, 'localhost', `10.1.2.3:${at(api)}`, `127.0.0.1.evil.example:${at(api)}`]) {
      await expectError(await withHost(bad, '/api/queues'), 421, 'HOST_NOT_ALLOWED');
    }
  });

  describe('with configured names', () => {
    const named = useApi(db, { app: { allowedHosts: ['baton.internal', 'proxy.example:8443'] } });

    it('a name without a port passes on any port, one with a port only on it; loopback still passes', async () => {
      const send = async (host: string) => (await withHost(host, '/api/queues', 'GET', {}, at(named))).status;
      for (const ok of ['baton.internal', 'BATON.internal:9999', 'proxy.example:8443', `localhost:${at(named)}`])
        expect(await send(ok), ok).toBe(200);
      for (const bad of ['proxy.example', 'proxy.example:80', 'evil.example', 'sub.baton.internal']) expect(await send(bad), bad).toBe(421);
    });
  });

  it('"*" turns the check off', async () => {
    const app = createApp(api.baton, { allowedHosts: '*', metrics: false });
    expect((await app.request('http://evil.example/api/queues')).status).toBe(200);
  });

  it('an invalid allowed-hosts entry is refused when the app is built', () => {
    expect(() => createApp(api.baton, { allowedHosts: ['ok.example', 'bad host'], metrics: false })).toThrow(/"bad host"/);
  });

  describe('the rules', () => {
    const allowed = (host: string, listen: ListenAddress | undefined, names: string[] = []) =>
      isAllowedHost(parseHost(host)!, parseAllowedHosts(names), listen);

    it('a wildcard bind (0.0.0.0 or ::) accepts IP literals and loopback names on its port, no other names', () => {
      for (const bind of ['0.0.0.0', '::']) {
        const listen = { host: bind, port: 8080 };
        for (const ok of ['10.1.2.3:8080', '[fe80::1]:8080', 'localhost:8080', '[::1]:8080'])
          expect(allowed(ok, listen), `${bind} ${ok}`).toBe(true);
        for (const bad of ['10.1.2.3:9090', 'evil.example:8080', 'pod.cluster.local:8080'])
          expect(allowed(bad, listen), `${bind} ${bad}`).toBe(false);
        expect(allowed('pod.cluster.local:8080', listen, ['pod.cluster.local'])).toBe(true);
      }
    });

    it('a bind to a name or an address accepts that name or address on its port', () => {
      expect(allowed('baton-host:8080', { host: 'baton-host', port: 8080 })).toBe(true);
      expect(allowed('10.0.0.5:8080', { host: '10.0.0.5', port: 8080 })).toBe(true);
      expect(allowed('10.0.0.6:8080', { host: '10.0.0.5', port: 8080 })).toBe(false);
      expect(allowed('[::1]:8080', { host: '::1', port: 8080 })).toBe(true);
      expect(allowed('baton-host', { host: 'baton-host', port: 80 })).toBe(true); // no port in Host means 80
    });

    it('before the listen address is known, loopback names and IP literals pass on any port, other names do not', () => {
      expect(allowed('localhost:1234', undefined)).toBe(true);
      expect(allowed('192.168.1.9:1', undefined)).toBe(true);
      expect(allowed('evil.example:1234', undefined)).toBe(false);
    });
  });
});
