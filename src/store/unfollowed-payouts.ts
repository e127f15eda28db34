/**
 * Payouts the service made under a reference whose row does not follow them: a create answered after its claim on
 * the row ended, or a webhook naming a payout under a row a create was tried for. Such a payout may be the row's
 * own, so the row is never created again blindly: a row waiting to be sent has its reference asked first, and a
 * row already settled otherwise has a query of its reference owed, so finance is told (src/poll/checks.ts).
 */
import type { Knex } from 'knex';
import { FINAL_ROW_STATES, type RowState } from '../domain/lifecycle.js';
import { REFERENCE_TAKEN } from '../domain/payout.js';
import { checkOwedNote, lateCreateNote, severalPayoutsNote, type HeldPayout } from '../domain/service-check.js';
import { isPostgres, writeTransaction, type Database } from './db.js';
import { moveRows, recordNote, type HistoryEntry } from './moves.js';
import { markServiceCheck } from './service-checks.js';
import { NAMED_ROW_COLUMNS, reaskUnknownOfReference, type FinalRowNamed } from './settlement.js';

/** States of a row without a payout that a create may still be sent for. */
const SENDABLE_AGAIN: readonly RowState[] = ['READY', 'CREATING'];

/**
 * Makes rows without a payout that a create may be sent for (READY, CREATING) UNKNOWN, in `trx`: their reference is
 * asked at the next reconcile, which adopts a payout held under it. A CREATING row's claim ends with it, so its
 * create's answer is refused as the claim's no longer; left CREATING, a "try later" answer would send it again.
 * Also the claim's ask before a row sent again under a reference tried before is first sent (./claims.ts).
 */
export async function askBeforeSending(
  trx: Knex.Transaction,
  rows: readonly { id: number; state: RowState }[],
  history: HistoryEntry,
  now: number,
): Promise<number> {
  const patch = { nextAttemptAt: now, unknownSince: now, leaseOwner: null, leaseExpiresAt: null };
  let moved = 0;
  for (const from of SENDABLE_AGAIN) {
    const ids = rows.filter((r) => r.state === from).map((r) => r.id);
    if (ids.length > 0) moved += (await moveRows(trx, ids, from, 'UNKNOWN', patch, history, now)).length;
  }
  return moved;
}

/**
 * Where a row stood towards a payout a late create made (see noteLateCreate):
 * - `resolving`: without a payout and not final: UNKNOWN now if it was not, its reference asked, which finds the
 *   payout and adopts it (or tells of several payouts held for the reference);
 * - `extra`: the row follows another payout, or ended without one: a query of its reference is owed.
 */
export type LateCreate = 'resolving' | 'extra';

/**
 * Writes down a payout that a create made after its claim on the row ended (another instance took the row over,
 * or an event made it UNKNOWN), or such a create's lost answer (`payoutId` null: it may have made one), in one
 * transaction with what it makes of the row: the row follows another outcome, so the payout would otherwise be
 * named nowhere. Nothing is written when the row already follows it. Returns where the row stood, or null when
 * nothing was written.
 */
export async function noteLateCreate(
  db: Database,
  rowId: number,
  payoutId: string | null,
  entryFor: (how: LateCreate) => HistoryEntry,
  now: number,
): Promise<LateCreate | null> {
  return writeTransaction(db, async (trx) => {
    // Locked: a reconcile, a claim or an answer moving the row meanwhile would leave the moves below matching nothing.
    const read = trx('payouts').where({ id: rowId });
    if (isPostgres(trx)) void read.forUpdate();
    const r = (await read.first('state', 'payout_id', 'merchant_reference_id')) as
      { state: RowState; payout_id: string | null; merchant_reference_id: string } | undefined;
    if (r === undefined || (payoutId !== null && r.payout_id === payoutId)) return null;
    if (r.payout_id === null && r.state === 'UNKNOWN') {
      // A query of the reference already out may have been answered before this payout was made: asked again.
      await recordNote(trx, rowId, entryFor('resolving'), now);
      await reaskUnknownOfReference(trx, r.merchant_reference_id, now);
      return 'resolving';
    }
    if (r.payout_id === null && SENDABLE_AGAIN.includes(r.state)) {
      // Found absent, or sent again, before this payout was made: sending it now could pay it twice.
      await askBeforeSending(trx, [{ id: rowId, state: r.state }], entryFor('resolving'), now);
      return 'resolving';
    }
    await recordNote(trx, rowId, entryFor('extra'), now);
    // A lost answer may have made the very payout the row follows: only a payout seen besides it makes two.
    const note = r.payout_id === null || payoutId === null ? lateCreateNote(payoutId) : severalPayoutsNote(2);
    await markServiceCheck(trx, { id: rowId, state: r.state, payoutId: r.payout_id }, 'REFERENCE', note, now);
    return 'extra';
  });
}

/** What the follow-up of an event did to the rows of its reference a create was tried for that hold no payout. */
export interface TriedRowsNamed {
  /** READY or CREATING rows made UNKNOWN: their reference is asked before any create. */
  unknown: number;
  /** Rows ended without a payout (NOT_SUBMITTED, CANCELLED, REJECTED) with a query of their reference owed now. */
  ended: Pick<FinalRowNamed, 'batchId' | 'line' | 'merchantReferenceId' | 'state'>[];
}

/**
 * Rows of a reference a webhook named a payout under that follow no payout although a create under the reference
 * was tried (read and locked in one query, so a row moving between states is not missed). Such a row may be that
 * payout's: one that may still be sent is asked about first (askBeforeSending), and one that ended without a payout
 * may have been paid after all: a query of its reference is owed now. A row never tried itself is asked about too
 * when another row tried the reference: sent again in a new file after that one was found absent, it repeats it.
 */
export async function triedRowsNamed(
  db: Database,
  event: HeldPayout & { merchantReferenceId: string },
  now: number,
): Promise<TriedRowsNamed> {
  return writeTransaction(db, async (trx) => {
    const read = trx('payouts')
      .where({ merchant_reference_id: event.merchantReferenceId })
      .whereIn('state', [...SENDABLE_AGAIN, ...FINAL_ROW_STATES])
      .whereNull('payout_id')
      // Refused because the service holds a payout under the reference: that payout is not the row's.
      .andWhere((q) => void q.whereNull('reason_code').orWhereNot('reason_code', REFERENCE_TAKEN));
    // Locked in id order, as answers lock them: a claim or a reconcile moving a row meanwhile would leave it unmoved.
    if (isPostgres(trx)) void read.orderBy('id').forUpdate();
    const found = (await read.select([...NAMED_ROW_COLUMNS, 'create_attempts as createAttempts'])) as (FinalRowNamed & {
      createAttempts: number;
    })[];
    const rows = found.some((r) => r.createAttempts > 0) ? found : [];
    const sendable = rows.filter((r) => SENDABLE_AGAIN.includes(r.state));
    const detail = `a payout.updated event named payout ${event.payoutId} under this reference; its reference is asked before any create`;
    const out: TriedRowsNamed = { unknown: await askBeforeSending(trx, sendable, { event: 'webhook-named', detail }, now), ended: [] };
    for (const r of rows.filter((x) => !SENDABLE_AGAIN.includes(x.state) && x.createAttempts > 0)) {
      if (await markServiceCheck(trx, r, 'REFERENCE', checkOwedNote('REFERENCE', r, event), now)) out.ended.push(r);
    }
    return out;
  });
}
