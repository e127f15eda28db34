/** The logging seam: any pino-like logger, silent by default. Callers pass only objects safe to log. */

export interface SandboxLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

const noop = (): void => undefined;

export const silentLogger: SandboxLogger = { debug: noop, info: noop, warn: noop, error: noop };
