// The daemon's outbox publishers, from BATON_OUTBOX_PUBLISHERS: JSON naming each destination
// and its publisher ({"hooks":{"type":"webhook","url":"...","secret":"..."}}), inline or as
// @path/to/file.json. Validated at start-up with the publishers' own option schemas; an error
// names the setting and the destination, never echoes a secret.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { nameSchema } from '../core/config.ts';
import type { PublisherMap } from '../core/outbox/publisher.ts';
import { natsOptionsSchema, natsPublisher } from '../publishers/nats.ts';
import { rabbitmqOptionsSchema, rabbitmqPublisher } from '../publishers/rabbitmq.ts';
import { webhookOptionsSchema, webhookPublisher } from '../publishers/webhook.ts';

const publisherSpecSchema = z.discriminatedUnion('type', [
  webhookOptionsSchema.extend({ type: z.literal('webhook') }),
  rabbitmqOptionsSchema.extend({ type: z.literal('rabbitmq') }),
  natsOptionsSchema.extend({ type: z.literal('nats') }),
]);
export type PublisherSpec = z.input<typeof publisherSpecSchema>;
const specsSchema = z.record(nameSchema, publisherSpecSchema);
export type PublisherSpecs = Record<string, PublisherSpec>;

/** Parses the setting's value (JSON, or @file relative to `cwd`); throws an Error whose message names what is wrong. */
export function parsePublisherSpecs(raw: string, cwd: string): PublisherSpecs {
  let text = raw;
  if (raw.startsWith('@')) {
    const file = path.resolve(cwd, raw.slice(1));
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error('is not valid JSON');
  }
  const r = specsSchema.safeParse(json);
  if (!r.success) {
    throw new Error(r.error.issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`).join('; '));
  }
  return r.data as PublisherSpecs;
}

/** Builds the publishers the specs describe (each connects on first use). */
export function buildPublishers(specs: PublisherSpecs): PublisherMap {
  const out: PublisherMap = {};
  for (const [name, spec] of Object.entries(specs)) {
    const { type, ...options } = spec;
    out[name] =
      type === 'webhook'
        ? webhookPublisher(options as Parameters<typeof webhookPublisher>[0])
        : type === 'rabbitmq'
          ? rabbitmqPublisher(options as Parameters<typeof rabbitmqPublisher>[0])
          : natsPublisher(options as Parameters<typeof natsPublisher>[0]);
  }
  return out;
}
