/** The webhook receiver (spec 6): verified, deduplicated `payout.updated` deliveries that make payouts due for a query. */
export { WebhookReceiver } from './receiver.js';
export { resolveReceiverOptions, type WebhookReceiverOptions, type WebhookVerdict } from './options.js';
export { WebhookConfigError, WebhookStartError } from './errors.js';
export { verifyDelivery } from './verify.js';
export { parseWebhookEvent } from './event.js';
export { NonceWindow } from '../signing/nonces.js';
