/** Printing for humans: aligned tables, and the one place that turns an error into a message and an exit code. */
import { ConfigError, PayoutdError, ServiceUnavailableError, UsageError } from '../domain/errors.js';

/** A mistake on the command line (as for an unknown option). */
export const EX_USAGE = 2;
/** sysexits.h: a configuration mistake (systemd does not restart on it: RestartPreventExitStatus=78). */
export const EX_CONFIG = 78;
/** sysexits.h: a service needed is unavailable (systemd restarts after RestartSec). */
export const EX_UNAVAILABLE = 69;

/**
 * Errors that mean the configuration (or a file it names) must be fixed; named, so no module is loaded to know
 * them. A SchemaError too: a database of a newer build, or one not migrated, waits for an operator; a restart
 * of the daemon would meet it again.
 */
const CONFIGURATION_ERRORS = new Set(['KeyFileError', 'WebhookConfigError', 'WebhookStartError', 'HmacKeyError', 'SchemaError']);
/** Codes of other modules' errors that, met by a command, are a mistake in its options: the report's dates, an approval's batch. */
const USAGE_CODES = new Set(['REPORT_BAD_DATE', 'REPORT_BAD_PERIOD', 'REPORT_PERIOD_NOT_OVER', 'APPROVAL_UNKNOWN_BATCH']);

export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

export function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

/** A safe one-line description of an error for the terminal. */
export function describeError(err: unknown): string {
  if (err instanceof PayoutdError) return `${err.code}: ${err.message}`;
  if (err instanceof Error) return err.message;
  return String(err);
}

/** The lines an error prints as: one per problem it names (a config with three mistakes says all three), each with its code. */
export function errorLines(err: unknown): string[] {
  if (err instanceof PayoutdError) return err.message.split('\n').map((line) => `${err.code}: ${line}`);
  return describeError(err).split('\n');
}

/** The process exit code of a command that failed with `err`. */
export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError || (err instanceof PayoutdError && USAGE_CODES.has(err.code))) return EX_USAGE;
  if (err instanceof ConfigError || (err instanceof PayoutdError && CONFIGURATION_ERRORS.has(err.name))) return EX_CONFIG;
  if (err instanceof ServiceUnavailableError) return EX_UNAVAILABLE;
  return 1;
}
