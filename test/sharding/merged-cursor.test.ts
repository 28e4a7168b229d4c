// The cursor after a page cut short at the HTTP size cap: the last id on one database; across
// clusters, the page's starting positions advanced to each cluster's last job shown.

import { describe, expect, it } from 'vitest';
import { cursorAfter, SHARDED_CURSOR_PATTERN } from '../../src/core/sharding/merged-listing.ts';

describe('cursorAfter', () => {
  it('is the last id on one database, null for an empty page', () => {
    expect(cursorAfter(undefined, ['9', '7'])).toBe('7');
    expect(cursorAfter('12', [])).toBeNull();
  });

  it("advances each cluster's position to its last job shown, keeping the others", () => {
    expect(cursorAfter('a:10.b:5.c:3', ['a:9', 'b:4', 'a:8'])).toBe('a:8.b:4.c:3');
    expect(cursorAfter(undefined, ['b:4'])).toBe('b:4');
    expect(SHARDED_CURSOR_PATTERN.test(cursorAfter(undefined, ['a:1', 'b:2']) as string)).toBe(true);
  });
});
