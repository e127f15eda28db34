/**
 * Notifications: batch events, stored with the change each reports (src/store/batch-events.ts), delivered at
 * least once to webhooks of the merchant's own systems, email and status files in the outbox. Not src/webhook,
 * which receives the payout service's callbacks.
 */
/**
 * recordBatchEvent(trx, {batchId, type, data}): stores an event in the caller's transaction, the one making
 * the change it reports. listBatchTimeline(db, batchId): a batch's events in order.
 */
export { recordBatchEvent, listBatchEvents as listBatchTimeline } from '../store/index.js';
export { NotificationDispatcher, type DeliveryOutcomeLabel } from './dispatcher.js';
export { ProgressEvents, progressDue } from './progress-events.js';
