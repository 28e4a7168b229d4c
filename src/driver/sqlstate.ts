// Which PostgreSQL SQLSTATEs mean "the database refused a value it was given": shared by the
// driver's error translation (src/db) and the HTTP edge, which cannot import src/db.

/**
 * True for SQLSTATEs that mean the database refused a value it was given: all of class 22
 * (data exception: NUL in text, a number or date out of range, a time zone displacement out
 * of range, ...) and 54001 (statement too complex, e.g. absurdly deep jsonb). A whole class
 * rather than a list, because a list misses the code nobody thought of and turns it into a 500.
 */
export function isInvalidInputSqlstate(code: string): boolean {
  return /^22[0-9A-Z]{3}$/.test(code) || code === '54001';
}
