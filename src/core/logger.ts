// The logger seam: the pino subset the engine calls. pino satisfies it
// structurally; the default is silent.

/** The logger Baton writes to: any pino-compatible one (the `logger` option); silent by default. */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

const noop = (): void => undefined;

export const noopLogger: Logger = {
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => noopLogger,
};
