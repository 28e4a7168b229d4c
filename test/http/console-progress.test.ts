// The console's rendering of a job's progress (util.js progressHtml), run in Node: the page's
// modules reach the DOM only inside functions, so this one can be imported as is.

import { describe, expect, it } from 'vitest';

const modulePath: string = new URL('../../src/http/console/util.js', import.meta.url).href;
const { progressHtml } = (await import(modulePath)) as { progressHtml: (p: unknown, max?: number) => string };

describe('console progressHtml', () => {
  it('shows a number as a bar and a percentage', () => {
    const html = progressHtml(42.25);
    expect(html).toContain('<div class="bar" title="42.25%"><span data-pct="42.25"></span></div>');
    expect(html).toContain('<span class="num">42.3%</span>');
  });

  it('shows an object as escaped, shortened JSON, with a bar when it has a numeric percent', () => {
    const html = progressHtml({ percent: 10, step: '<upload>' }, 20);
    expect(html).toContain('data-pct="10"');
    expect(html).toContain('title="{&quot;percent&quot;:10,&quot;step&quot;:&quot;&lt;upload&gt;&quot;}"');
    expect(html).toContain('<code>{&quot;percent&quot;:10,&quot;step…</code>');
    expect(progressHtml({ step: 'a' })).not.toContain('class="bar"');
    expect(progressHtml({ percent: 'most' })).not.toContain('class="bar"');
  });

  it('shows nothing for a job without progress', () => {
    expect(progressHtml(null)).toBe('');
    expect(progressHtml(undefined)).toBe('');
  });
});
