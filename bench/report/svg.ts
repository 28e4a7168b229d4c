import type { BenchReport } from '../main.ts';
export function renderSvg(_r: BenchReport): string { return '<svg xmlns="http://www.w3.org/2000/svg"/>'; }
