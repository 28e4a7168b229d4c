// Names of prepared statements. The server keeps the first 63 bytes of a name (NAMEDATALEN - 1):
// two names that differ only past that would share one prepared statement on a session, and the
// second would run the first one's text. A name that would not fit is replaced by a digest of it.

import { createHash } from 'node:crypto';

/** The longest name the server keeps whole. */
const NAME_MAX_BYTES = 63;

/** `<schema>.<key>` when that fits, else `baton_` and the SHA-1 of it (46 bytes): same input, same name. */
export function statementName(schema: string, key: string): string {
  const name = `${schema}.${key}`;
  if (Buffer.byteLength(name) <= NAME_MAX_BYTES) return name;
  return `baton_${createHash('sha1').update(name).digest('hex')}`;
}
