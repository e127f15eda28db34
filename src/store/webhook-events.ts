/**
 * Webhook deliveries already seen: the webhook receiver remembers each event
 * by its eventId. Deduplication lives in the database (the webhook_events primary
 * key), not in memory, so it holds across restarts and across daemon
 * instances sharing a PostgreSQL database. INSERT … ON CONFLICT DO NOTHING
 * RETURNING works the same on SQLite (3.35+) and PostgreSQL: a row back
 * means first delivery, no row means the eventId was already recorded.
 * Remembered events are forgotten after a retention far beyond the sender's
 * retry schedule, so the table does not grow for the life of the daemon.
 */
import type { Database } from './db.js';

/** What is kept of a `payout.updated` delivery. */
export interface WebhookEventRecord {
  eventId: string;
  payoutId: string;
  merchantReferenceId: string | null;
  status: string | null;
}

/** True when this is the first delivery of the event (now recorded), false for a duplicate. */
export async function recordWebhookEvent(db: Database, e: WebhookEventRecord, receivedAt: number): Promise<boolean> {
  return db.transaction(async (trx) => {
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
    return rows.length > 0;
  });
}

/**
 * Forgets events received before `before`. A copy arriving after that is
 * taken as new, which costs only an early query: an event never moves a
 * payout by itself.
 */
export async function forgetWebhookEventsBefore(db: Database, before: number): Promise<number> {
  return (await db('webhook_events').where('received_at', '<', before).delete()) as number;
}
