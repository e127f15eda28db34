/**
 * Batch events, stored in the transaction of the change each reports (the
 * outbox pattern): a crash after the change cannot lose its event, and a
 * rolled-back change leaves none. Each channel's delivery of an event has a
 * row of its own (batch_event_deliveries): its attempts, its backoff and its
 * claim (one instance at a time delivers an event to a channel, a lease as
 * for rows), made once for each channel that takes the event's type just
 * after it is stored. The event stays PENDING until no channel owes it; it is
 * ended when its last record is. Delivery itself is src/notify's.
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

/** An event claimed for delivery to a channel, with the channel's failed attempts at it so far. */
export interface ClaimedEvent extends BatchEvent {
  attempts: number;
}

function newEventId(): string {
  return `evt_${randomUUID().replaceAll('-', '')}`;
}

function fromRow(r: Record<string, unknown>): BatchEvent {
  const type = String(r['type']);
  if (!isBatchEventType(type)) throw new PayoutdError('BATCH_EVENT_DAMAGED', `batch event ${String(r['id'])} has an unknown type`);
  return {
    seq: Number(r['seq']),
    id: String(r['id']),
    batchId: String(r['batch_id']),
    type,
    data: JSON.parse(String(r['data_json'])) as BatchEvent['data'],
    createdAt: Number(r['created_at']),
  };
}

/**
 * Stores a batch event. Pass the transaction that makes the change the event reports, so both are
 * committed together or neither is. Of the event's own delivery columns (0016's, for every channel together)
 * only delivery_state is kept up to date now; attempts and next_attempt_at are where each channel's record
 * starts (a new event is due when it happens), and delivered_to, last_error and the lease are no longer written.
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
  return rows.map(fromRow);
}

/** A batch's latest event of `type`, if any. */
export async function latestBatchEvent(db: Database, batchId: string, type: BatchEventType): Promise<BatchEvent | undefined> {
  const r = (await db('batch_events').where({ batch_id: batchId, type }).orderBy('seq', 'desc').first()) as
    Record<string, unknown> | undefined;
  return r ? fromRow(r) : undefined;
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

/** A notification channel as the store knows it: its name and the event types it takes. */
export interface ChannelScope {
  name: string;
  types: readonly BatchEventType[];
}

const DELIVERIES = 'batch_event_deliveries';
/** Rows per statement when records are made or dropped (well under SQLite's limit of bound values). */
const CHUNK = 200;

function chunks<T>(items: readonly T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function seqsOf(values: readonly unknown[]): number[] {
  return values.map(Number);
}

/** Each channel's record of an event, owed from where the event's own columns start it (0016: a new event's time). */
function owedRecords(channels: readonly ChannelScope[], e: Record<string, unknown>): Record<string, unknown>[] {
  const type = String(e['type']) as BatchEventType;
  return channels
    .filter((c) => c.types.includes(type))
    .map((c) => ({
      event_seq: e['seq'],
      channel: c.name,
      state: 'PENDING',
      attempts: e['attempts'],
      next_attempt_at: e['next_attempt_at'],
    }));
}

async function insertOwed(db: Database, rows: readonly Record<string, unknown>[]): Promise<void> {
  for (const part of chunks(rows)) await db(DELIVERIES).insert(part).onConflict(['event_seq', 'channel']).ignore();
}

/**
 * Makes the delivery records of up to `limit` events stored since the last call, oldest first: one per channel of
 * `channels` that takes the event's type. An event no channel takes is done at once. Returns how many events' records
 * it made.
 */
export async function makeDeliveryRecords(db: Database, channels: readonly ChannelScope[], now: number, limit: number): Promise<number> {
  return writeTransaction(db, async (trx) => {
    const events = (await trx('batch_events')
      .whereNull('deliveries_made_at')
      .orderBy('seq', 'asc')
      .limit(limit)
      .select('seq', 'type', 'delivery_state', 'attempts', 'next_attempt_at')) as Record<string, unknown>[];
    if (events.length === 0) return 0;
    await insertOwed(
      trx,
      events.filter((e) => e['delivery_state'] === 'PENDING').flatMap((e) => owedRecords(channels, e)),
    );
    const made = seqsOf(events.map((e) => e['seq']));
    for (const part of chunks(made)) await trx('batch_events').whereIn('seq', part).update({ deliveries_made_at: now });
    await finishIn(trx, made);
    return made.length;
  });
}

/**
 * Makes a channel that is newly configured (or takes other types now) owe every pending event of the types it takes,
 * and owe none of the others: records of a type it no longer takes are dropped.
 */
export async function owePendingEvents(db: Database, channel: ChannelScope): Promise<void> {
  if (channel.types.length === 0) return dropChannelRecords(db, channel.name);
  for (;;) {
    const untaken = seqsOf(
      (await db(`${DELIVERIES} as d`)
        .join('batch_events as e', 'e.seq', 'd.event_seq')
        .where({ 'd.channel': channel.name, 'd.state': 'PENDING' })
        .whereNotIn('e.type', channel.types)
        .limit(CHUNK)
        .pluck('d.event_seq')) as unknown[],
    );
    if (untaken.length === 0) break;
    await dropOwed(db, channel.name, untaken);
  }
  const pending = (await db('batch_events')
    .where({ delivery_state: 'PENDING' })
    .whereIn('type', channel.types)
    .select('seq', 'type', 'attempts', 'next_attempt_at')) as Record<string, unknown>[];
  await insertOwed(
    db,
    pending.flatMap((e) => owedRecords([channel], e)),
  );
}

/** The channels that still owe an event (at a start: some may be configured no more). */
export async function channelsOwing(db: Database): Promise<string[]> {
  return (await db(DELIVERIES).where({ state: 'PENDING' }).distinct().pluck('channel')) as string[];
}

/** Drops what a channel no longer configured owes. */
export async function dropChannelRecords(db: Database, channel: string): Promise<void> {
  for (;;) {
    const owed = seqsOf((await db(DELIVERIES).where({ channel, state: 'PENDING' }).limit(CHUNK).pluck('event_seq')) as unknown[]);
    if (owed.length === 0) return;
    await dropOwed(db, channel, owed);
  }
}

function dropOwed(db: Database, channel: string, seqs: number[]): Promise<void> {
  return writeTransaction(db, async (trx) => {
    await trx(DELIVERIES).where({ channel, state: 'PENDING' }).whereIn('event_seq', seqs).delete();
    return finishIn(trx, seqs);
  });
}

/**
 * Takes up to `limit` of a channel's deliveries due now, those due longest first, each under a lease of this
 * instance for that channel only: one instance delivers an event to a channel at a time, and the other channels take
 * it on their own. An instance that dies leaves its claims to the others when the lease ends. `alone` (SQLite, one
 * process): every lease is a dead process's, and is not waited for. The events come back oldest first.
 */
export async function claimChannelEvents(
  db: Database,
  claim: { channel: string; instanceId: string; leaseMs: number; now: number; limit: number; alone?: boolean },
): Promise<ClaimedEvent[]> {
  const { channel, instanceId, leaseMs, now, limit } = claim;
  const free = (q: Knex.QueryBuilder) =>
    claim.alone ? q : q.where((w) => w.whereNull('lease_owner').orWhere('lease_expires_at', '<', now).orWhere('lease_owner', instanceId));
  const due = () => db(DELIVERIES).where({ channel, state: 'PENDING' }).andWhere('next_attempt_at', '<=', now);
  const candidates = seqsOf(
    (await free(due())
      .orderBy([
        { column: 'next_attempt_at', order: 'asc' },
        { column: 'event_seq', order: 'asc' },
      ])
      .limit(limit)
      .pluck('event_seq')) as unknown[],
  );
  const claimed: number[] = [];
  for (const seq of candidates) {
    // Taken only if still free when the update runs: of two instances, one wins each event of the channel.
    const n = await free(due().andWhere({ event_seq: seq })).update({ lease_owner: instanceId, lease_expires_at: now + leaseMs });
    if (n === 1) claimed.push(seq);
  }
  if (claimed.length === 0) return [];
  const rows = (await db('batch_events as e')
    .join(`${DELIVERIES} as d`, 'd.event_seq', 'e.seq')
    .where('d.channel', channel)
    .whereIn('e.seq', claimed)
    .orderBy('e.seq', 'asc')
    .select('e.*', 'd.attempts as channel_attempts')) as Record<string, unknown>[];
  return rows.map((r) => ({ ...fromRow(r), attempts: Number(r['channel_attempts']) }));
}

/**
 * Renews this instance's claims for `channel` on those of `seqs` it has not settled yet, and says how many are still
 * its own: a delivery pass that outlasts a lease keeps its events, and one taken over meanwhile is not delivered again.
 */
export async function holdChannelClaims(
  db: Database,
  channel: string,
  seqs: readonly number[],
  instanceId: string,
  leaseMs: number,
  now: number,
): Promise<number> {
  if (seqs.length === 0) return 0;
  return db(DELIVERIES)
    .whereIn('event_seq', seqs)
    .andWhere({ channel, lease_owner: instanceId, state: 'PENDING' })
    .update({ lease_expires_at: now + leaseMs });
}

/** An earlier event of a batch that a channel has not taken yet. */
export interface OwedEvent {
  id: string;
  /** When the channel tries it next. */
  nextAttemptAt: number;
}

/** The batch's events before `seq` still owed to `channel`, oldest first: a later event waits behind them. */
export async function eventsOwedBefore(db: Database, channel: string, batchId: string, seq: number): Promise<OwedEvent[]> {
  const rows = (await db('batch_events as e')
    .join(`${DELIVERIES} as d`, 'd.event_seq', 'e.seq')
    .where({ 'e.batch_id': batchId, 'd.channel': channel, 'd.state': 'PENDING' })
    .andWhere('e.seq', '<', seq)
    .orderBy('e.seq', 'asc')
    .select('e.id', 'd.next_attempt_at')) as Record<string, unknown>[];
  return rows.map((r) => ({ id: String(r['id']), nextAttemptAt: Number(r['next_attempt_at']) }));
}

/** What a channel's attempt (or its wait behind an earlier event) did with an event. */
export interface ChannelOutcome {
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: number;
  /** Why the last attempt failed, or what the event waits behind (no secret, no payload). */
  lastError: string | null;
}

/** Lets go of this instance's claim on a channel's delivery of an event, leaving the record as it was. */
export async function releaseChannelClaim(db: Database, seq: number, channel: string, instanceId: string): Promise<void> {
  await db(DELIVERIES).where({ event_seq: seq, channel, lease_owner: instanceId }).update({ lease_owner: null, lease_expires_at: null });
}

/**
 * Records what a channel did with an event and lets go of its claim; false when the claim was no longer ours. The
 * event is done, in the same transaction, once this was the last channel that owed it.
 */
export async function settleChannelDelivery(
  db: Database,
  seq: number,
  channel: string,
  instanceId: string,
  o: ChannelOutcome,
): Promise<boolean> {
  const settle = (q: Database): Promise<number> =>
    q(DELIVERIES).where({ event_seq: seq, channel, lease_owner: instanceId }).update({
      state: o.state,
      attempts: o.attempts,
      next_attempt_at: o.nextAttemptAt,
      last_error: o.lastError,
      lease_owner: null,
      lease_expires_at: null,
    });
  if (o.state === 'PENDING') return (await settle(db)) === 1;
  return writeTransaction(db, async (trx) => {
    if ((await settle(trx)) !== 1) return false;
    await finishIn(trx, [seq]);
    return true;
  });
}

/**
 * Ends the delivery of those of `seqs` whose records are made and that no channel owes any more (each took it or gave
 * it up, or none takes its type): GAVE_UP if a channel gave it up, else DELIVERED.
 */
async function finishIn(trx: Database, seqs: readonly number[]): Promise<void> {
  for (const part of chunks(seqs)) {
    // Locked first (PostgreSQL): of two channels settling an event's last records at once, the later sees the other's.
    const open = seqsOf(
      (await trx('batch_events')
        .whereIn('seq', part)
        .andWhere({ delivery_state: 'PENDING' })
        .whereNotNull('deliveries_made_at')
        .orderBy('seq', 'asc')
        .forUpdate()
        .pluck('seq')) as unknown[],
    );
    if (open.length === 0) continue;
    const records = (await trx(DELIVERIES)
      .whereIn('event_seq', open)
      .whereIn('state', ['PENDING', 'GAVE_UP'])
      .select('event_seq', 'state')) as { event_seq: unknown; state: string }[];
    const inState = (state: string): Set<number> => new Set(seqsOf(records.filter((r) => r.state === state).map((r) => r.event_seq)));
    const owed = inState('PENDING');
    const done = open.filter((s) => !owed.has(s));
    if (done.length === 0) continue;
    const gaveUp = inState('GAVE_UP');
    const given = done.filter((s) => gaveUp.has(s));
    const delivered = done.filter((s) => !gaveUp.has(s));
    if (given.length > 0) await trx('batch_events').whereIn('seq', given).update({ delivery_state: 'GAVE_UP' });
    if (delivered.length > 0) await trx('batch_events').whereIn('seq', delivered).update({ delivery_state: 'DELIVERED' });
  }
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
