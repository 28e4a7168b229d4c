// Advisory-lock namespaces: each use of PostgreSQL's two-key advisory locks within a schema
// gets a stable int4 of its own, apart from the presence locks and from other schemas'.

import { createHash } from 'node:crypto';

/** The namespace (first key) of `purpose`'s advisory locks in the schema `quotedSchema`. */
export function lockNamespace(purpose: string, quotedSchema: string): number {
  return createHash('sha1').update(`baton.${purpose}:${quotedSchema}`).digest().readInt32BE(0);
}
