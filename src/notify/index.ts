/**
 * Notifications: batch events (stored with the change each reports, see
 * src/store/batch-events.ts) delivered at least once to the configured
 * channels — signed HTTP webhooks to the merchant's own systems, email, and
 * a status file per batch in the outbox. Not to be confused with
 * src/webhook, which receives the payout service's callbacks.
 */
export {
  BATCH_EVENT_TYPES,
  eventTypeName,
  type BatchEvent,
  type BatchEventData,
  type BatchEventInput,
  type BatchEventType,
} from '../domain/batch-events.js';
/**
 * recordBatchEvent(trx, {batchId, type, data}): stores an event in the caller's transaction, the one making
 * the change it reports. listBatchTimeline(db, batchId): a batch's events in order.
 */
export { recordBatchEvent, listBatchEvents as listBatchTimeline } from '../store/index.js';
export { NotificationDispatcher, type DeliveryOutcomeLabel, type DispatcherDeps, type DispatcherOptions } from './dispatcher.js';
export { ProgressEvents, progressDue } from './progress-events.js';
export { batchSnapshot, eventPayload, shownState, type BatchSnapshot, type EventPayload } from './payload.js';
export { standardWebhookHeaders, signingKey } from './signing.js';
export { statusFileName, statusRecords, writeStatusFiles } from './status-file.js';
export { emailText, webhookName } from './channels.js';
export { NotifyError } from './errors.js';
