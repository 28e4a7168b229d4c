// What the console's browser suites share: the system Chromium (never a downloaded browser),
// the real daemon on the file's own database, one page, and more daemons for a test that needs
// a differently configured one on the same database. useConsole() registers the hooks, so call
// it inside the suite's describe; its fields are read inside hooks and tests only.

import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { type TestDatabase, useTestDatabase } from '../helpers/db.ts';
import { type DaemonProcess, freePort, runBaton, waitExit, waitReady } from './daemon-process.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
export { JSON_HEADERS } from '../helpers/http.ts';

/** Says loudly that `file` is skipped when Chromium is missing (describe.skipIf does the skipping). */
export function warnIfNoChromium(file: string): void {
  if (!hasChromium) console.warn(`\n*** SKIPPED ${file}: ${CHROMIUM} is missing (apt-get install -y chromium) ***\n`);
}

export interface ConsoleOptions {
  /** `baton serve` arguments besides --port. */
  args?: string[];
  /**
   * The daemon's environment besides DATABASE_URL and LOG_LEVEL=warn; a function is called when
   * the daemon starts (after the hooks registered before useConsole, e.g. a server it must know).
   */
  env?: Record<string, string> | (() => Record<string, string>);
  viewport: { width: number; height: number };
  /** The URL (after the base) the page first opens, waiting for its first good refresh; none when absent. */
  openAt?: string;
}

export interface ConsoleSuite {
  readonly db: TestDatabase;
  readonly daemon: DaemonProcess;
  readonly browser: Browser;
  readonly page: Page;
  /** http://127.0.0.1:<port> of the daemon. */
  readonly base: string;
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Starts `baton serve` on a free port of this host and waits until it is ready. */
export async function startDaemon(db: TestDatabase, args: string[] = [], env: Record<string, string> = {}) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const daemon = runBaton(['serve', '--port', String(port), ...args], { DATABASE_URL: db.url, LOG_LEVEL: 'warn', ...env });
  try {
    await waitReady(daemon, base);
  } catch (err) {
    daemon.kill();
    throw err;
  }
  return { daemon, base };
}

/**
 * Runs `fn` against one more daemon on the same database, then stops it and expects a clean
 * exit. The suite's own daemon keeps running meanwhile.
 */
export async function withDaemon(
  db: TestDatabase,
  args: string[],
  env: Record<string, string>,
  fn: (base: string) => Promise<void>,
): Promise<void> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const d = runBaton(['serve', '--port', String(port), ...args], { DATABASE_URL: db.url, LOG_LEVEL: 'warn', ...env });
  try {
    await waitReady(d, base);
    await fn(base);
  } finally {
    d.child.kill('SIGTERM');
    expect(await waitExit(d, 30_000)).toBe(0);
  }
}

/**
 * Waits for `selector` to be visible. On a timeout the error also carries the page's status
 * line (a refresh that failed shows its error there) and the end of the daemon's output, so a
 * failure in a loaded run says whether the page or the server was stuck.
 */
export async function waitVisible(p: Page, selector: string, daemon?: DaemonProcess, timeout = 15_000) {
  try {
    return await p.waitForSelector(selector, { state: 'visible', timeout });
  } catch (err) {
    const status = await p.textContent('#status', { timeout: 1_000 }).catch(() => null);
    const output = daemon ? `\n--- daemon output ---\n${daemon.output().slice(-2000)}` : '';
    throw new Error(`${(err as Error).message}\nconsole status: ${status}; url: ${p.url()}${output}`);
  }
}

/** Waits for the console's first good refresh (its status line says so). */
export const consoleReady = (p: Page) => p.waitForSelector('#status[data-status="ok"]', { timeout: 15_000 });

/** The file's database, its daemon, Chromium and one page, made before its tests and removed after them. */
export function useConsole(opts: ConsoleOptions): ConsoleSuite {
  const db = useTestDatabase();
  let started: { daemon: DaemonProcess; base: string } | undefined;
  let browser: Browser | undefined;
  let page: Page | undefined;
  const get = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`useConsole(): the ${what} exists only inside hooks and tests (after beforeAll)`);
    return v;
  };

  beforeAll(async () => {
    started = await startDaemon(db, opts.args, typeof opts.env === 'function' ? opts.env() : opts.env);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: opts.viewport });
    if (opts.openAt !== undefined) {
      await page.goto(`${started.base}/${opts.openAt}`);
      await consoleReady(page);
    }
  });

  afterAll(async () => {
    await browser?.close();
    if (started) {
      const { daemon } = started;
      daemon.child.kill('SIGTERM');
      await waitExit(daemon, 30_000).catch(() => daemon.kill());
    }
  });

  return {
    db,
    get daemon() {
      return get(started, 'daemon').daemon;
    },
    get base() {
      return get(started, 'daemon').base;
    },
    get browser() {
      return get(browser, 'browser');
    },
    get page() {
      return get(page, 'page');
    },
  };
}
