// Number formatting shared by the Markdown and SVG reports.

import type { Spread } from '../stats.ts';

export function num(x: number, digits?: number): string {
  if (x === Number.POSITIVE_INFINITY) return '∞';
  if (!Number.isFinite(x)) return 'n/a';
  const d = digits ?? (Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2);
  return x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
}

/** "median (min–max)", or just the median for a single run. */
export function spreadText(s: Spread | undefined, digits?: number): string {
  if (!s || s.runs === 0) return 'n/a';
  if (s.runs === 1 || s.min === s.max) return num(s.median, digits);
  return `${num(s.median, digits)} (${num(s.min, digits)}–${num(s.max, digits)})`;
}

export function ratio(a: number | undefined, b: number | undefined): string {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return 'n/a';
  return `${(a / b).toFixed(2)}x`;
}

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
