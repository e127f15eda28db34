/** Errors of the console, each with a stable code; messages are safe to show and log. */
import { PayoutdError } from '../domain/errors.js';

export class ConsoleError extends PayoutdError {
  override readonly name = 'ConsoleError';
}
