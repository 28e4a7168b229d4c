import { chromium } from 'playwright-core';
const base = process.argv[2];
const views = (process.argv[3] ?? '').split(',');
const width = Number(process.argv[4] ?? 375);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage({ viewport: { width, height: 800 } });
const errors: string[] = [];
page.on('pageerror', (e) => errors.push(String(e)));
for (const v of views) {
  await page.goto(`${base}/#/${v}`);
  await page.waitForSelector('#status[data-status="ok"]', { timeout: 15000 });
  await page.waitForTimeout(1500);
  console.log(v || 'overview', await page.evaluate('document.documentElement.scrollWidth'));
  await page.screenshot({ path: `/tmp/fd/w${width}-${(v || 'overview').replace(/[^a-z0-9]/g, '_')}.png` });
}
console.log('errors', errors);
await browser.close();
