/**
 * Webhook deliveries already seen, by eventId, in the database so it holds across restarts and instances.
 * Remembered events are forgotten after a retention far beyond the sender's retry schedule.
 */
import { writeTransaction, type Database } from './db.js';

/** What is kept of a `payout.updated` delivery. */
export interface WebhookEventRecord {
  eventId: string;
  payoutId: string;
  merchantReferenceId: string | null;
  status: string | null;
}

/**
 * Records the first delivery of an event and runs `followUp` on it in the same transaction: a follow-up that throws
 * leaves the event unrecorded, so a redelivery is not taken as a duplicate. Null for a duplicate (nothing run).
 */
export async function recordWebhookEvent<T>(
  db: Database,
  e: WebhookEventRecord,
  receivedAt: number,
  followUp: (trx: Database) => Promise<T>,
): Promise<{ followedUp: T } | null> {
  return writeTransaction(db, async (trx) => {
    const rows = (await trx('webhook_events')
      .insert({
        event_id: e.eventId,
        received_at: receivedAt,
        payout_id: e.payoutId,
        merchant_reference_id: e.merchantReferenceId,
        status: e.status,
      })
      .onConflict('event_id')
      .ignore()
      .returning('event_id')) as unknown[];
    return rows.length > 0 ? { followedUp: await followUp(trx) } : null;
  });
}

/** Forgets events received before `before`; a later copy costs only an early query: an event never moves a payout. */
export async function forgetWebhookEventsBefore(db: Database, before: number): Promise<number> {
  return (await db('webhook_events').where('received_at', '<', before).delete()) as number;
}
