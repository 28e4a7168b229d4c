// results/bench-<date>.svg, hand-written: throughput per system (bars with min–max
// whiskers) and start-latency distributions per system on a log axis.

import type { BenchReport } from '../main.ts';
import type { Figure } from '../scenarios/context.ts';
import { escapeXml, num } from './format.ts';

const W = 960;
const LABEL_W = 300;
const ROW = 22;
const COLORS: Record<string, string> = { baton: '#1f6feb', 'graphile-worker': '#8250df', 'pg-boss': '#bf8700' };

function text(x: number, y: number, s: string, attrs = ''): string {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${escapeXml(s)}</text>`;
}

function throughputPanel(r: BenchReport, top: number, out: string[]): number {
  const figs = r.figures.filter((f) => f.scenario === 'throughput' && f.status === 'ok');
  if (!figs.length) return top;
  const maxV = Math.max(...figs.map((f) => f.summary.jobsPerSec?.max ?? 0), 1);
  const plotW = W - LABEL_W - 120;
  out.push(
    text(
      16,
      top + 16,
      `Throughput: ${String((figs[0]!.params as { jobs: number }).jobs)} no-op jobs drained by one process (jobs/s, median; whisker = min–max)`,
      'font-weight="bold"',
    ),
  );
  let y = top + 32;
  for (const f of figs) {
    const s = f.summary.jobsPerSec!;
    const sys = r.variants.find((v) => v.id === f.variantId)?.system ?? 'baton';
    const w = (s.median / maxV) * plotW;
    out.push(text(16, y + 14, f.label, 'font-size="12"'));
    out.push(
      `<rect x="${LABEL_W}" y="${y + 3}" width="${Math.max(1, w).toFixed(1)}" height="${ROW - 8}" fill="${COLORS[sys]}" opacity="0.85"/>`,
    );
    const x0 = LABEL_W + (s.min / maxV) * plotW;
    const x1 = LABEL_W + (s.max / maxV) * plotW;
    out.push(`<line x1="${x0.toFixed(1)}" x2="${x1.toFixed(1)}" y1="${y + 10}" y2="${y + 10}" stroke="#000" stroke-width="1"/>`);
    out.push(
      text(LABEL_W + Math.max(w, (s.max / maxV) * plotW) + 6, y + 14, `${num(s.median, 0)}${f.note ? ' (capped)' : ''}`, 'font-size="12"'),
    );
    y += ROW;
  }
  return y + 12;
}

/** Log-scale x for latency in ms between 0.1 ms and 10 s. */
function lx(ms: number, plotW: number): number {
  const lo = Math.log10(0.1);
  const hi = Math.log10(10_000);
  const v = Math.min(hi, Math.max(lo, Math.log10(Math.max(ms, 0.1))));
  return LABEL_W + ((v - lo) / (hi - lo)) * plotW;
}

function latencyPanel(r: BenchReport, scenario: string, title: string, top: number, out: string[]): number {
  const figs = r.figures.filter((f) => f.scenario === scenario && f.status === 'ok' && f.quantiles);
  if (!figs.length) return top;
  const plotW = W - LABEL_W - 40;
  out.push(text(16, top + 16, title, 'font-weight="bold"'));
  let y = top + 30;
  for (const t of [0.1, 1, 10, 100, 1000, 10000]) {
    const x = lx(t, plotW);
    out.push(`<line x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${y}" y2="${y + figs.length * ROW}" stroke="#ddd"/>`);
    out.push(text(x - 10, y + figs.length * ROW + 14, t >= 1000 ? `${t / 1000} s` : `${t} ms`, 'font-size="11" fill="#555"'));
  }
  for (const f of figs) {
    const q = f.quantiles!;
    const sys = r.variants.find((v) => v.id === f.variantId)?.system ?? 'baton';
    const c = COLORS[sys];
    // null: the job never started (saturated); drawn at the right edge. Negative samples clamp to the axis.
    const at = (p: number): number => q[p] ?? Number.POSITIVE_INFINITY;
    const x = (p: number) => lx(Math.min(at(p), 10_000), plotW);
    out.push(text(16, y + 14, f.label, 'font-size="12"'));
    const xMin = x(0);
    const xMax = x(100);
    out.push(`<line x1="${xMin.toFixed(1)}" x2="${xMax.toFixed(1)}" y1="${y + 10}" y2="${y + 10}" stroke="${c}" stroke-width="1"/>`);
    const x50 = x(50);
    const x95 = x(95);
    const x99 = x(99);
    out.push(
      `<rect x="${x50.toFixed(1)}" y="${y + 4}" width="${Math.max(1, x95 - x50).toFixed(1)}" height="12" fill="${c}" opacity="0.6"/>`,
    );
    out.push(`<line x1="${x99.toFixed(1)}" x2="${x99.toFixed(1)}" y1="${y + 2}" y2="${y + 18}" stroke="${c}" stroke-width="2"/>`);
    out.push(`<circle cx="${x50.toFixed(1)}" cy="${y + 10}" r="3.5" fill="#000"/>`);
    if (at(100) === Number.POSITIVE_INFINITY) out.push(text(xMax - 90, y + 14, 'not all started', 'font-size="11" fill="#b00"'));
    y += ROW;
  }
  out.push(text(LABEL_W, y + 30, '● p50   ▬ p50–p95   | p99   — min…max   (pooled counted runs, log scale)', 'font-size="11" fill="#555"'));
  return y + 44;
}

export function renderSvg(r: BenchReport): string {
  const body: string[] = [];
  let y = 8;
  y = throughputPanel(r, y, body);
  const lat = r.figures.find((f) => f.scenario === 'latency');
  const sparse = r.figures.find((f) => f.scenario === 'latency-sparse');
  const http = r.figures.find((f) => f.scenario === 'latency-http');
  const label = (f: Figure | undefined) => (f ? `${String(f.params.rate)} jobs/s, ${String(f.params.jobs)} jobs` : '');
  y = latencyPanel(r, 'latency', `Start latency, ${label(lat)} (handler start − enqueue commit)`, y, body);
  y = latencyPanel(r, 'latency-sparse', `Start latency, sparse: ${label(sparse)}`, y, body);
  y = latencyPanel(r, 'latency-http', `Start latency via HTTP (POST /api/jobs): ${label(http)}`, y, body);
  const foot = `${r.machine.cpuModel}, ${r.machine.cores} cores; ${r.machine.postgres.version.split(' ').slice(0, 2).join(' ')}; Node ${r.machine.node}; ${r.startedAt.slice(0, 10)}`;
  body.push(text(16, y + 10, foot, 'font-size="11" fill="#555"'));
  const h = y + 24;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${h}" viewBox="0 0 ${W} ${h}" font-family="system-ui, sans-serif" font-size="13">\n<rect width="100%" height="100%" fill="#fff"/>\n${body.join('\n')}\n</svg>\n`;
}
