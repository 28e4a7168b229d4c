// placeholder
import type { Variant } from '../systems/types.ts';
import type { Ctx, Figure } from './context.ts';
export async function recovery(_ctx: Ctx, _v: Variant, _o: { fastReclaim: boolean }): Promise<Figure> { throw new Error('x'); }
