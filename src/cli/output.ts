/**
 * Printing for humans: plain aligned tables, and the one place that turns
 * an error into a message and an exit code.
 */
import { PayoutdError } from '../domain/errors.js';

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
