/** The base error of payoutd: a stable `code` an operator can search for, and a message safe to log. */
export class PayoutdError extends Error {
  override readonly name: string = 'PayoutdError';
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** The shape logged for an error: safe by construction. */
  toLog(): { name: string; code: string; message: string } {
    return { name: this.name, code: this.code, message: this.message };
  }
}

export class ConfigError extends PayoutdError {
  override readonly name = 'ConfigError';
}

/** A mistake on the command line: a missing or bad option, a batch id that names no batch (exit 2). */
export class UsageError extends PayoutdError {
  override readonly name = 'UsageError';
}

/** A service payoutd needs did not answer (the payout API at start, after startup.waitForServiceMs). */
export class ServiceUnavailableError extends PayoutdError {
  override readonly name = 'ServiceUnavailableError';
}

/** An error of the SQLite or PostgreSQL driver, by its shape (who meets one need not know the store's drivers). */
export function isDriverError(err: Error): boolean {
  return err.name === 'SqliteError' || typeof (err as { severity?: unknown }).severity === 'string';
}
