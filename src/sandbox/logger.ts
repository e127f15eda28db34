/**
 * The logging seam: the sandbox logs through any pino-like logger it is
 * given (pino's Logger fits), and is silent by default. Callers pass only
 * objects built to be safe: no tokens, keys, signatures or full account
 * numbers ever reach a log call.
 */

export interface SandboxLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

const noop = (): void => undefined;

export const silentLogger: SandboxLogger = { debug: noop, info: noop, warn: noop, error: noop };
