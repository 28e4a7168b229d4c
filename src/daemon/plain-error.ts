// Failures the CLI reports as one plain line with exit code 1: their message names
// what failed (with secrets masked) and what to do, so a stack trace would only bury it.

export class PlainError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
