/**
 * Errors the webhook receiver raises on purpose: bad options (named, with
 * the value's type but never a secret's text) and failures to start
 * listening. Refused deliveries are not errors: they are verdicts.
 */
import { PayoutdError } from '../domain/errors.js';

export class WebhookConfigError extends PayoutdError {
  override readonly name = 'WebhookConfigError';
}

export class WebhookStartError extends PayoutdError {
  override readonly name = 'WebhookStartError';
}
