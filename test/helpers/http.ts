// What the HTTP and browser suites share about talking to the server: the JSON content type
// and reading an error body's stable code.

export const JSON_HEADERS = { 'content-type': 'application/json' };

/** Reads a response's error body and returns its code (undefined if the body is not the error shape). */
export async function errorCode(res: Response): Promise<string | undefined> {
  const body = (await res.json().catch(() => undefined)) as { error?: { code?: string } } | undefined;
  return body?.error?.code;
}
