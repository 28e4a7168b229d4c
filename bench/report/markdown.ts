import type { BenchReport } from '../main.ts';
export function renderMarkdown(r: BenchReport, _svg: string): string { return JSON.stringify(r.figures.map(f => [f.label, f.scenario, f.summary])); }
