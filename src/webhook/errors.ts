/** Errors the webhook receiver raises: bad options and failures to listen. Refused deliveries are verdicts, not errors. */
import { PayoutdError } from '../domain/errors.js';

export class WebhookConfigError extends PayoutdError {
  override readonly name = 'WebhookConfigError';
}

export class WebhookStartError extends PayoutdError {
  override readonly name = 'WebhookStartError';
}
