// The admin console's files (src/http/console/, copied to dist/http/console/ by the build):
// the page at GET /, its stylesheet and ES modules at GET /console/<name>. Only the names
// listed here are served, so no request can name another file; each is read from disk
// once and kept in memory.

import { readFile } from 'node:fs/promises';
import path from 'node:path';

/** Every file the page loads, with its Content-Type. A file added to src/http/console/ must be listed here. */
export const CONSOLE_ASSETS: ReadonlyMap<string, string> = new Map(
  [
    'console.css',
    'main.js',
    'actions.js',
    'api.js',
    'charts.js',
    'forms.js',
    'job-detail.js',
    'jobs.js',
    'outbox.js',
    'queues.js',
    'refresh.js',
    'router.js',
    'schedules.js',
    'summary.js',
    'util.js',
    'workflows.js',
  ].map((name) => [name, name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8']),
);

/**
 * The policy of every console answer: nothing loads from elsewhere, and no inline script or
 * style runs (the page's scripts and styles are files of this server), so injected markup
 * cannot execute.
 */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** Headers of every console answer; no-store, so a browser never mixes files of two versions. */
export const CONSOLE_HEADERS = { 'Cache-Control': 'no-store', 'Content-Security-Policy': CONSOLE_CSP } as const;

export interface ConsoleFiles {
  /** The page, or undefined when it is not installed. */
  page(): Promise<string | undefined>;
  /** A listed file with its Content-Type, or undefined (not listed, or not installed). */
  asset(name: string): Promise<{ body: string; contentType: string } | undefined>;
}

/** The console whose page is `htmlPath`; its other files are read from the same folder. */
export function consoleFiles(htmlPath: string, demoHandlers: boolean): ConsoleFiles {
  const dir = path.dirname(htmlPath);
  const cache = new Map<string, string>();
  // A failed read is not cached, so a console deployed later is picked up.
  const read = async (file: string, transform: (text: string) => string = (t) => t): Promise<string | undefined> => {
    const hit = cache.get(file);
    if (hit !== undefined) return hit;
    try {
      const text = transform(await readFile(file, 'utf8'));
      cache.set(file, text);
      return text;
    } catch {
      return undefined;
    }
  };
  return {
    // The page hides its demo button unless its body says the demo handlers run here.
    page: () => read(htmlPath, (html) => (demoHandlers ? html.replace('<body data-demo="off">', '<body data-demo="on">') : html)),
    asset: async (name) => {
      const contentType = CONSOLE_ASSETS.get(name);
      if (contentType === undefined) return undefined;
      const body = await read(path.join(dir, name));
      return body === undefined ? undefined : { body, contentType };
    },
  };
}
