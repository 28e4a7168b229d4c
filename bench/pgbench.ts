// placeholder
import type { Ctx } from './scenarios/context.ts';
export interface PgbenchResult { name: string; batch: number; clients: number; tps: number; jobsPerSec: number; transactions: number; latencyMs: number }
export async function pgbenchCeiling(_ctx: Ctx): Promise<PgbenchResult[]> { throw new Error('not yet'); }
