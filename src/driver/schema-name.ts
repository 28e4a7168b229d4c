// Validates the schema name once and quotes it once: the only identifier ever
// interpolated into SQL text. Everything else travels as a $n parameter.

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** True when `name` is an acceptable schema name (lowercase, 1-63 chars, [a-z0-9_], not starting with a digit). */
export function isValidSchemaName(name: string): boolean {
  return SCHEMA_NAME.test(name) && !name.startsWith('pg_');
}

/** Returns the schema name double-quoted for SQL. Throws on an invalid name (a programmer error: config validates first). */
export function quoteSchema(name: string): string {
  if (!isValidSchemaName(name)) throw new Error(`invalid schema name: ${JSON.stringify(name)}`);
  return `"${name}"`;
}
