// Publisher options and the optional broker packages: a missing package is INVALID_CONFIG
// naming what to install; bad options are refused when the publisher is built.

import { describe, expect, it } from 'vitest';
import { isBatonError, natsPublisher, rabbitmqPublisher } from '../../src/index.ts';
import { optionalImport } from '../../src/publishers/optional-import.ts';

describe('publisher construction', () => {
  it('a missing optional package is INVALID_CONFIG naming the package', async () => {
    const err = await optionalImport('no-such-package-baton', () => import('no-such-package-baton' as string), 'the X publisher').catch(
      (e) => e,
    );
    expect(isBatonError(err) && err.code).toBe('INVALID_CONFIG');
    expect(err.message).toBe('the X publisher needs the optional package no-such-package-baton: npm install no-such-package-baton');
  });

  it('refuses bad options at construction', () => {
    expect(() => rabbitmqPublisher({ url: 'http://x' })).toThrow(/url: must be an amqp/);
    expect(() => natsPublisher({ servers: [] })).toThrow(/servers/);
    expect(() => natsPublisher({ servers: 'nats://x', ackTimeoutMs: 0 })).toThrow(/ackTimeoutMs/);
  });
});
