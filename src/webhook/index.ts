/** The webhook receiver (spec 6): verified, deduplicated `payout.updated` deliveries that make payouts due for a query. */
export { WebhookReceiver, pollSoonAndWake } from './receiver.js';
export {
  WEBHOOK_DEFAULTS,
  resolveReceiverOptions,
  type WebhookReceiverOptions,
  type ResolvedReceiverOptions,
  type WebhookTlsOptions,
  type WebhookVerdict,
} from './options.js';
export { WebhookConfigError, WebhookStartError } from './errors.js';
export { verifyDelivery, minifiedBodyOf, type DeliveryToVerify, type VerifyOptions, type VerifyResult } from './verify.js';
export {
  parseWebhookEvent,
  PAYOUT_UPDATED,
  type WebhookEvent,
  type PayoutUpdatedEvent,
  type OtherEvent,
  type MalformedEvent,
} from './event.js';
export { NonceWindow } from '../signing/nonces.js';
