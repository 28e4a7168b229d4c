// A handler's progress report (ctx.progress): validated where it is made, kept as the latest
// value per lease, and stored by the heartbeater at most once per heartbeat (coalesced).

import { BatonError } from '../types/errors.ts';
import { type JobProgress, PROGRESS_MAX_BYTES } from '../types/job.ts';
import { jsonTextHasNul } from './job-spec.ts';

function refuse(why: string, details?: unknown): BatonError {
  return new BatonError('INVALID_ARGUMENT', `invalid progress: ${why}`, details === undefined ? {} : { details });
}

/**
 * The JSON text of a valid progress value: a finite number from 0 to 100, or a plain object
 * whose JSON text is at most PROGRESS_MAX_BYTES bytes, without NUL characters.
 * @throws BatonError INVALID_ARGUMENT otherwise (details.limitBytes when too large).
 */
export function progressText(value: JobProgress): string {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0 || value > 100) throw refuse('a number must be from 0 to 100');
    return JSON.stringify(value);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw refuse('must be a number from 0 to 100 or a JSON object');
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new BatonError('INVALID_ARGUMENT', 'invalid progress: not JSON-serialisable', { cause: err });
  }
  // A toJSON (a Date's, or an object's own) may turn the object into a number out of range, a
  // string or an array: what is stored must itself be an object.
  if (text === undefined || !text.startsWith('{')) throw refuse('must be a number from 0 to 100 or a JSON object');
  const bytes = Buffer.byteLength(text);
  if (bytes > PROGRESS_MAX_BYTES) {
    throw refuse(`${bytes} bytes of JSON, more than ${PROGRESS_MAX_BYTES}`, { limitBytes: PROGRESS_MAX_BYTES, bytes });
  }
  if (jsonTextHasNul(text)) throw refuse('contains NUL (\\u0000) characters');
  return text;
}
