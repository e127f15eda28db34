/**
 * Batch events, stored in the transaction of the change each reports (the
 * outbox pattern): a crash after the change cannot lose its event, and a
 * rolled-back change leaves none. The event's row is also its delivery's
 * claim: one instance at a time delivers it (a lease, as for rows), and
 * records which channels took it. Delivery itself is src/notify's.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import {
  isBatchEventType,
  shownBatchState,
  shownStateOf,
  type BatchEvent,
  type BatchEventInput,
  type BatchEventType,
} from '../domain/batch-events.js';
import { PayoutdError } from '../domain/errors.js';
import { writeTransaction, type Database } from './db.js';

/** Where an event's delivery stands. */
export type DeliveryState = 'PENDING' | 'DELIVERED' | 'GAVE_UP';

/** An event claimed for delivery, with what its earlier attempts achieved. */
export interface ClaimedEvent extends BatchEvent {
  deliveredTo: string[];
  attempts: number;
}

/** What one delivery pass did with an event. */
export interface DeliveryOutcome {
  state: DeliveryState;
  deliveredTo: string[];
  attempts: number;
  nextAttemptAt: number;
  /** Why the last attempt failed (no secret, no payload). */
  lastError: string | null;
}

function newEventId(): string {
  return `evt_${randomUUID().replaceAll('-', '')}`;
}

function fromRow(r: Record<string, unknown>): ClaimedEvent {
  const type = String(r['type']);
  if (!isBatchEventType(type)) throw new PayoutdError('BATCH_EVENT_DAMAGED', `batch event ${String(r['id'])} has an unknown type`);
  return {
    seq: Number(r['seq']),
    id: String(r['id']),
    batchId: String(r['batch_id']),
    type,
    data: JSON.parse(String(r['data_json'])) as BatchEvent['data'],
    createdAt: Number(r['created_at']),
    deliveredTo: JSON.parse(String(r['delivered_to'] ?? '[]')) as string[],
    attempts: Number(r['attempts'] ?? 0),
  };
}

/**
 * Stores a batch event. Pass the transaction that makes the change the event reports, so both are
 * committed together or neither is.
 */
export async function recordBatchEvent(trx: Database, input: BatchEventInput): Promise<BatchEvent> {
  const createdAt = input.at ?? Date.now();
  const event = { id: newEventId(), batchId: input.batchId, type: input.type, data: input.data ?? {}, createdAt };
  const rows = (await trx('batch_events')
    .insert({
      id: event.id,
      batch_id: event.batchId,
      type: event.type,
      data_json: JSON.stringify(event.data),
      created_at: createdAt,
      next_attempt_at: createdAt,
    })
    .returning('seq')) as (number | { seq: number })[];
  const first = rows[0];
  return { ...event, seq: Number(typeof first === 'object' ? first.seq : first) };
}

/**
 * Stores an event unless another of its type was stored for the batch since `lastSeq` (null: none yet), and
 * says whether it did. The batch's row is locked meanwhile (PostgreSQL), so of several instances deciding
 * the same periodic event at once, one records it.
 */
export async function recordBatchEventIfLatest(db: Database, input: BatchEventInput, lastSeq: number | null): Promise<boolean> {
  return writeTransaction(db, async (trx) => {
    await trx('batches').where({ id: input.batchId }).forUpdate().first('id');
    const r = (await trx('batch_events').where({ batch_id: input.batchId, type: input.type }).max({ seq: 'seq' }).first()) as
      { seq: number | string | null } | undefined;
    const latest = r?.seq === null || r?.seq === undefined ? null : Number(r.seq);
    if (latest !== lastSeq) return false;
    await recordBatchEvent(trx, input);
    return true;
  });
}

/** A batch's events in the order they happened (its timeline). */
export async function listBatchEvents(db: Database, batchId: string): Promise<BatchEvent[]> {
  const rows = (await db('batch_events').where({ batch_id: batchId }).orderBy('seq', 'asc')) as Record<string, unknown>[];
  return rows.map((r) => {
    const { deliveredTo: _d, attempts: _a, ...event } = fromRow(r);
    return event;
  });
}

/** A batch's latest event of `type`, if any. */
export async function latestBatchEvent(db: Database, batchId: string, type: BatchEventType): Promise<BatchEvent | undefined> {
  const r = (await db('batch_events').where({ batch_id: batchId, type }).orderBy('seq', 'desc').first()) as
    Record<string, unknown> | undefined;
  if (!r) return undefined;
  const { deliveredTo: _d, attempts: _a, ...event } = fromRow(r);
  return event;
}

/** When each batch's latest event of one of `types` happened, for the batches given. */
export async function latestEventTimes(db: Database, batchIds: string[], types: BatchEventType[]): Promise<Map<string, number>> {
  if (batchIds.length === 0) return new Map();
  const rows = (await db('batch_events')
    .whereIn('batch_id', batchIds)
    .whereIn('type', types)
    .select('batch_id')
    .max({ at: 'created_at' })
    .groupBy('batch_id')) as { batch_id: string; at: number | string }[];
  return new Map(rows.map((r) => [r.batch_id, Number(r.at)]));
}

/**
 * Takes up to `limit` events due for delivery, oldest first, each under a lease for this instance: one
 * instance delivers an event at a time; an instance that dies leaves it to the others when the lease ends.
 * `alone` (SQLite, one process): every lease is a dead process's, and is not waited for.
 */
export async function claimDueEvents(
  db: Database,
  claim: { instanceId: string; leaseMs: number; now: number; limit: number; alone?: boolean },
): Promise<ClaimedEvent[]> {
  const { instanceId, leaseMs, now, limit } = claim;
  const free = (q: Knex.QueryBuilder) =>
    claim.alone ? q : q.where((w) => w.whereNull('lease_owner').orWhere('lease_expires_at', '<', now).orWhere('lease_owner', instanceId));
  const candidates = (await free(db('batch_events').where({ delivery_state: 'PENDING' }).andWhere('next_attempt_at', '<=', now))
    .orderBy('seq', 'asc')
    .limit(limit)
    .pluck('seq')) as number[];
  const claimed: number[] = [];
  for (const seq of candidates) {
    // Taken only if still free when the update runs: of two instances, one wins each event.
    const n = await free(db('batch_events').where({ seq, delivery_state: 'PENDING' })).update({
      lease_owner: instanceId,
      lease_expires_at: now + leaseMs,
    });
    if (n === 1) claimed.push(seq);
  }
  if (claimed.length === 0) return [];
  const rows = (await db('batch_events').whereIn('seq', claimed).orderBy('seq', 'asc')) as Record<string, unknown>[];
  return rows.map(fromRow);
}

/**
 * Renews this instance's claims on those of `seqs` it has not settled yet, and says how many are still its own:
 * a delivery pass that outlasts a lease keeps its events, and one taken over meanwhile is not delivered again.
 */
export async function holdEventClaims(
  db: Database,
  seqs: readonly number[],
  instanceId: string,
  leaseMs: number,
  now: number,
): Promise<number> {
  if (seqs.length === 0) return 0;
  return db('batch_events')
    .whereIn('seq', seqs)
    .andWhere({ lease_owner: instanceId, delivery_state: 'PENDING' })
    .update({ lease_expires_at: now + leaseMs });
}

/** An earlier event of a batch that some channel has not taken yet. */
export interface UndeliveredEvent {
  id: string;
  type: BatchEventType;
  deliveredTo: string[];
  nextAttemptAt: number;
}

/** The batch's events before `seq` still owed to a channel, oldest first: a later event waits behind them. */
export async function undeliveredEventsBefore(db: Database, batchId: string, seq: number): Promise<UndeliveredEvent[]> {
  const rows = (await db('batch_events')
    .where({ batch_id: batchId, delivery_state: 'PENDING' })
    .andWhere('seq', '<', seq)
    .orderBy('seq', 'asc')) as Record<string, unknown>[];
  return rows.map((r) => {
    const { id, type, deliveredTo } = fromRow(r);
    return { id, type, deliveredTo, nextAttemptAt: Number(r['next_attempt_at']) };
  });
}

/** Records what a delivery pass did with an event and lets go of its claim. */
export async function settleEventDelivery(db: Database, seq: number, instanceId: string, o: DeliveryOutcome): Promise<void> {
  await db('batch_events')
    .where({ seq, lease_owner: instanceId })
    .update({
      delivery_state: o.state,
      delivered_to: JSON.stringify(o.deliveredTo),
      attempts: o.attempts,
      next_attempt_at: o.nextAttemptAt,
      last_error: o.lastError,
      lease_owner: null,
      lease_expires_at: null,
    });
}

/** Events per delivery state (metrics). */
export async function countEventsByDelivery(db: Database): Promise<Partial<Record<DeliveryState, number>>> {
  const rows = (await db('batch_events').select('delivery_state').count({ n: '*' }).groupBy('delivery_state')) as {
    delivery_state: DeliveryState;
    n: number | string;
  }[];
  return Object.fromEntries(rows.map((r) => [r.delivery_state, Number(r.n)]));
}

/**
 * Batches by state as an operator counts them: an ACTIVE batch waiting for an approval is AWAITING_APPROVAL,
 * one under any other hold is HELD, one an operator cancelled CANCELLED when shownStateOf says so, the rest of the
 * ACTIVE ones ACTIVE. Batches never cancelled are counted in SQL; the few cancelled ones go through shownStateOf
 * itself, so /metrics cannot count a batch under another word than status shows.
 */
export async function countBatchesByState(db: Database): Promise<Record<string, number>> {
  const grouped = (await db('batches')
    .whereNull('cancelled_at')
    .select('state', 'hold_code')
    .count({ n: '*' })
    .groupBy('state', 'hold_code')) as { state: string; hold_code: string | null; n: number | string }[];
  const cancelled = (await db('batches')
    .whereNotNull('cancelled_at')
    .select('state', 'hold_code', 'cancelled_at', 'final_counts_json')) as {
    state: string;
    hold_code: string | null;
    cancelled_at: number | string;
    final_counts_json: string | null;
  }[];
  const out: Record<string, number> = {};
  const add = (key: string, n: number): void => {
    out[key] = (out[key] ?? 0) + n;
  };
  for (const r of grouped) add(shownBatchState(r.state, r.hold_code, false), Number(r.n));
  for (const r of cancelled) {
    add(
      shownStateOf({ state: r.state, holdCode: r.hold_code, cancelledAt: Number(r.cancelled_at), finalCountsJson: r.final_counts_json }),
      1,
    );
  }
  return out;
}

/** The events that put a hold on a batch. */
const HOLD_EVENTS: BatchEventType[] = ['held', 'awaiting-approval'];

/** When the longest-standing hold of an ACTIVE batch began (its latest hold event); null when none is held. */
export async function oldestHoldSince(db: Database): Promise<number | null> {
  const r = (await db('batch_events as e')
    .join('batches as b', 'b.id', 'e.batch_id')
    .where('b.state', 'ACTIVE')
    .whereNotNull('b.hold_code')
    .whereIn('e.type', HOLD_EVENTS)
    .whereNotExists(
      db('batch_events as later')
        .select(db.raw('1'))
        .whereRaw('later.batch_id = e.batch_id')
        .whereRaw('later.seq > e.seq')
        .whereIn('later.type', HOLD_EVENTS),
    )
    .min({ at: 'e.created_at' })
    .first()) as { at: number | string | null } | undefined;
  return r?.at === null || r?.at === undefined ? null : Number(r.at);
}
