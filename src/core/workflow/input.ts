// The values a workflow start takes, checked: option errors as INVALID_ARGUMENT naming each
// issue, inputs and payloads as JSON text (no NUL), and a workflow's own input schema.

import type { z } from 'zod';
import { BatonError } from '../../types/errors.ts';
import type { InputSchema } from '../../types/workflow.ts';
import { jsonTextHasNul } from '../job-spec.ts';

/** Anything with parse(value): a zod schema, for instance. */
export const isInputSchema = (v: unknown): v is InputSchema =>
  typeof v === 'object' && v !== null && typeof (v as { parse?: unknown }).parse === 'function';

/** Why `schema` refuses `input`, or null when it accepts it. */
export function inputRefusal(schema: InputSchema | undefined, input: unknown): string | null {
  if (!schema) return null;
  try {
    schema.parse(input);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** A zod refusal as INVALID_ARGUMENT, naming each issue. */
export function invalid(what: string, error: z.ZodError): BatonError {
  const issues = error.issues.map((i) => `${i.path.join('.') || what}: ${i.message}`);
  return new BatonError('INVALID_ARGUMENT', `invalid ${what}: ${issues.join('; ')}`, { details: { issues } });
}

/** `value` as the JSON text stored (jsonb), refused when it is not JSON-safe or holds NUL. */
export function jsonText(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value === undefined ? null : value);
  } catch (error) {
    throw new BatonError('INVALID_ARGUMENT', `${what} is not JSON-serialisable`, { cause: error });
  }
  if (text === undefined) return 'null';
  if (jsonTextHasNul(text)) throw new BatonError('INVALID_ARGUMENT', `${what} contains NUL (\\u0000) characters`);
  return text;
}
