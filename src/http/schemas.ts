// The zod pieces every resource's contracts share (names, integers and instants in a query
// string); each resource's own contracts are in its folder (jobs/schemas.ts, ...).

import { z } from 'zod';
import { nameSchema as engineNameSchema } from '../core/config.ts';
import { ID_PATTERN } from '../types/job.ts';

/**
 * Queue, job type and tenant names: the engine's rule (NAME_PATTERN: 1-128 of [A-Za-z0-9_.:-/],
 * no empty segment), and at the edge also no "." or ".." segment: names show up in URLs
 * (/api/queues/:queue/depth), where such segments are rewritten by clients and proxies.
 */
export const nameSchema = engineNameSchema
  .refine((s) => !s.split('/').some((seg) => seg === '.' || seg === '..'), 'must not contain "." or ".." path segments')
  .meta({ description: '1-128 characters of A-Z a-z 0-9 _ . : - /, case-sensitive; no empty, "." or ".." segment' });

/** A non-negative decimal integer in a query string, bounded; "1e9", "-1", "1.5", "" are refused. */
export function intParam(min: number, max: number, dflt?: number) {
  return z
    .string()
    .regex(/^\d{1,9}$/, `must be an integer from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`))
    .meta({ description: `a decimal integer from ${min} to ${max}${dflt === undefined ? '' : `; default ${dflt}`}` });
}

/** An ISO 8601 instant with Z or an offset, in a query string. */
export function instantParam(description: string) {
  return z.iso
    .datetime({ offset: true })
    .transform((s) => new Date(s))
    .pipe(z.date().refine((d) => Number.isFinite(d.getTime()), 'must be a valid instant'))
    .meta({ description: `${description}: ISO 8601 with Z or an offset` });
}

/**
 * The cursor of a keyset-paged listing (runs, outbox messages): the `nextCursor` of the previous
 * page, an id. Pages by cursor cost the same however deep; an offset page reads every row before it.
 */
export const cursorParam = z
  .string()
  .regex(ID_PATTERN, 'must be the nextCursor of an earlier page')
  .optional()
  .meta({ description: 'the nextCursor of the previous page: the page continues right after it (not with offset)' });

/** A page's `nextCursor`: the id of its last `item`, when the page is full. */
export const nextCursorSchema = (item: string) =>
  z
    .string()
    .nullable()
    .meta({
      description: `pass as cursor to read the next page: the id of the last ${item} of this page when the page is full; null otherwise`,
    });
