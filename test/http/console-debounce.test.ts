// The console's rendering of a job's debounce or throttle rule (util.js windowHtml), run in Node
// like console-progress.test.ts: the page's modules reach the DOM only inside functions.

import { describe, expect, it } from 'vitest';

const modulePath: string = new URL('../../src/http/console/util.js', import.meta.url).href;
const { windowHtml } = (await import(modulePath)) as { windowHtml: (w: unknown) => string };

describe('console windowHtml', () => {
  it('shows a debounce with its key, mode, window and max wait', () => {
    const html = windowHtml({ kind: 'debounce', key: 'user:<1>', windowMs: 1_500, mode: 'trailing', maxWaitMs: 90_000 });
    expect(html).toContain('<code class="mono">user:&lt;1&gt;</code>');
    expect(html).toContain('trailing, window 1.5 s, max wait 1.5 min');
    expect(windowHtml({ kind: 'debounce', key: 'k', windowMs: 250, mode: 'leading', maxWaitMs: null })).toContain(
      'leading, window 250 ms</span>',
    );
  });

  it('shows a throttle as its limit per window', () => {
    expect(windowHtml({ kind: 'throttle', key: 'api', windowMs: 7_200_000, limit: 3 })).toContain('3 per 2 h');
  });

  it('shows nothing for a job without a rule', () => {
    expect(windowHtml(undefined)).toBe('');
  });
});
