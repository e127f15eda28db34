/**
 * Notifications: batch events (stored with the change each reports, see
 * src/store/batch-events.ts) delivered at least once to the configured
 * channels — signed HTTP webhooks to the merchant's systems, email, and a
 * status file per batch in the outbox. Not to be confused with src/webhook,
 * which receives the payout service's own callbacks.
 */
export {
  BATCH_EVENT_TYPES,
  eventTypeName,
  type BatchEvent,
  type BatchEventData,
  type BatchEventInput,
  type BatchEventType,
} from '../domain/batch-events.js';
/** Stores an event in the caller's transaction (the one making the change it reports). */
export { recordBatchEvent, listBatchEvents as listBatchTimeline } from '../store/index.js';
