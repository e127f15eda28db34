/**
 * References a spreadsheet made of others: a file of numeric references opened and saved again has `000123` as
 * `123` (a General number cell of an .xlsx reads so too), and dropped again it would pay each row once more under
 * a reference payoutd has never seen (and a column of the format `0000` reads `0123`). At the acceptance, a valid
 * row whose reference is another's but for leading zeros (src/domain/leading-zeros.ts, sameButLeadingZeros) is
 * refused: against a row holding its reference in another batch or waiting in a file being read (VALIDATED), or
 * any row of its own file. Every way: `000123` after `123`, or after `0123`, too. A row whose own reference is
 * held was refused for that first (./acceptance.ts, markByRange), with the advice for its own payout.
 *
 * Each row of an all-digit reference keeps those digits (reference_digits, migration 0040), so this is a probe
 * of an index per such row, never a read of other references. It needs no transaction of the acceptance's: of
 * two files holding such references, the one checked later has the other's rows stored, and refuses its own row
 * while the other's holds its reference; never both paid. Two checks at once take turns (pairsInTurn), so
 * one of the two is paid.
 */
import { isBeingRead, REFERENCE_HOLDING_STATES } from '../domain/lifecycle.js';
import { referenceDigits } from '../domain/leading-zeros.js';
import { isPostgres, type Database } from './db.js';
import type { LineRange } from './payouts.js';
import { ifNotPaidBy, placeIn, standingOf, standingOrder } from './row-place.js';

/**
 * Rows of other batches a row is checked against: those holding their reference, and those of a file being read
 * that wait for its holder (VALIDATED), which that file's acceptance turns READY after its own check may have run.
 */
const HOLDING_OR_WAITING = [...(REFERENCE_HOLDING_STATES as string[]), 'VALIDATED'];
/** Valid rows of a batch being accepted (./acceptance.ts). */
const VALID = ['READY', 'VALIDATED'];

/** A row refused for its reference's zeros: the state it was read in, the state it goes to, and why. */
export interface ZerosRefusal {
  id: number;
  line: number;
  from: string;
  to: 'DUPLICATE' | 'INVALID';
  code: 'LEADING_ZEROS_LOST';
  reason: string;
}

/** A valid row of the batch and a row whose reference is the same digits but for leading zeros. */
interface ZerosPair {
  id: number | string;
  line: number;
  state: string;
  merchant_reference_id: string;
  other_id: number | string;
  other_batch: string;
  other_line: number;
  other_state: string;
  other_reference: string;
  other_batch_state: string;
  other_file: string;
  other_received_at: number | string;
}

/** Whether the batch has a row of an all-digit reference: a file of other references costs this one probe. */
export async function hasDigitReferences(db: Database, batchId: string): Promise<boolean> {
  return (await db('payouts').where({ batch_id: batchId }).whereNotNull('reference_digits').first('id')) !== undefined;
}

/**
 * The pairs of the batch's valid rows on `range`'s lines: each with a row of another batch holding its reference,
 * or with any other row of the batch, whose reference is the same digits but for leading zeros.
 */
async function pairsOf(trx: Database, batchId: string, range: LineRange): Promise<ZerosPair[]> {
  const q = trx('payouts as p')
    .join('payouts as o', function () {
      this.on('o.reference_digits', '=', 'p.reference_digits')
        .andOn('o.id', '<>', 'p.id')
        .andOn('o.merchant_reference_id', '<>', 'p.merchant_reference_id');
    })
    .join('batches as ob', 'ob.id', 'o.batch_id')
    .where('p.batch_id', batchId)
    .whereNotNull('p.reference_digits')
    .whereNotNull('o.reference_digits')
    .whereIn('p.state', VALID)
    .andWhere('p.line', '>', range.after)
    .andWhere((w) => void w.where('o.batch_id', batchId).orWhereIn('o.state', HOLDING_OR_WAITING))
    .select(
      'p.id',
      'p.line',
      'p.state',
      'p.merchant_reference_id',
      'o.id as other_id',
      'o.batch_id as other_batch',
      'o.line as other_line',
      'o.state as other_state',
      'o.merchant_reference_id as other_reference',
      'ob.state as other_batch_state',
      'ob.file_name as other_file',
      'ob.received_at as other_received_at',
    );
  if (range.upTo !== null) void q.andWhere('p.line', '<=', range.upTo);
  return (await q) as ZerosPair[];
}

/**
 * The pairs, read again under a lock when a row of a file being read is among them. On PostgreSQL two files
 * checked at once could each find the other's row holding the digits and both refuse, so neither pays: the
 * second waits for the first's refusal to commit and, reading again, finds it. One lock, taken only then, so no
 * order of locks to keep. SQLite's write lock already has the checks take turns.
 */
async function pairsInTurn(trx: Database, batchId: string, range: LineRange): Promise<ZerosPair[]> {
  const pairs = await pairsOf(trx, batchId, range);
  if (!isPostgres(trx) || !pairs.some((p) => p.other_batch !== batchId && isBeingRead(p.other_batch_state))) return pairs;
  await trx.raw('select pg_advisory_xact_lock(hashtext(current_schema() || ?))', ['.payoutd_reference_zeros']);
  return pairsOf(trx, batchId, range);
}

/** The earlier row a message names: the most telling, then the first stored. */
const byStanding = standingOrder((p: ZerosPair) => [p.other_state, p.other_batch_state, p.other_id]);

/** How `reference` differs from `other`, of the same digits: it lost all, or some, of its leading zeros, or gained some. */
function zerosChange(reference: string, other: string): string {
  if (reference.length > other.length) return 'with leading zeros added';
  return referenceDigits(reference) === reference ? 'without its leading zeros' : 'with fewer leading zeros';
}

const SPREADSHEET = 'a spreadsheet drops the leading zeros of a number when a file is opened and saved, so';
const ANOTHER = 'if it is another payout, give it a reference that is not the same digits';

/** Why a row is refused for a reference of another batch that is the same digits but for leading zeros, and what to do. */
function earlierZerosMessage(reference: string, held: ZerosPair): string {
  const place = placeIn(held.other_file, held.other_line, held.other_batch, held.other_received_at);
  const same = `the reference ${reference} is ${held.other_reference} ${zerosChange(reference, held.other_reference)}, the reference of ${place}`;
  switch (standingOf(held.other_state, held.other_batch_state)) {
    case 'paid':
      return `${same}, which is PAID; ${SPREADSHEET} this row is taken for that payout and not paid: if it is that payout, nothing to do, it was paid; ${ANOTHER}`;
    case 'paying':
      return `${same}, which is ${held.other_state}; ${SPREADSHEET} this row is taken for that payout and not paid: if it is that payout, nothing to do, it is being paid; ${ANOTHER}`;
    case 'ended':
      // Only a CANCELLED payout is in its batch's retry file; a REJECTED one is sent again under a new reference.
      if (held.other_state === 'REJECTED')
        return `${same}, which is REJECTED; ${SPREADSHEET} this row is taken for that payout and not paid: if it is that payout, see why it was rejected in that batch's result file, and send it again under a new reference that is not the same digits (a REJECTED payout is not in a retry file); ${ANOTHER}`;
      return `${same}, which is ${held.other_state}; ${SPREADSHEET} this row is taken for that payout and not paid: if it is that payout, see how it ended in that batch's result file, and retry it from its retry file (payoutd retry-file --batch ${held.other_batch}); ${ANOTHER}`;
    // Both rows may be refused, each checked while the other held its digits: the message says so.
    case 'being read':
      return `${same}, a file being read at the same time; ${SPREADSHEET} this row is taken for that row and not paid by this file: ${ifNotPaidBy(held.other_file)}; ${ANOTHER}`;
  }
}

/**
 * Why the row of `reference` is refused when other rows of its file have the same digits but for leading zeros
 * (`others`: their references and lines), and what to do. The ack says it, and `payoutd validate`.
 */
export function inFileZerosMessage(reference: string, others: readonly { reference: string; line: number }[]): string {
  const sorted = [...others].sort((a, b) => a.line - b.line);
  const named = sorted.map((o) => `${o.reference} on line ${o.line} of this file ${zerosChange(reference, o.reference)}`);
  return `the reference ${reference} is ${named.join(', and ')}; ${SPREADSHEET} these rows are taken for one payout and none of them is paid: if they are one payout, delete the rows that repeat it; if they are different payouts, give them references that are not the same digits`;
}

/**
 * The refusals of the batch's valid rows on `range`'s lines whose reference is another's but for leading zeros:
 * DUPLICATE when a row of another batch holds it (the most telling named), else INVALID for one of its own file.
 */
export async function zerosRefusals(trx: Database, batchId: string, range: LineRange): Promise<ZerosRefusal[]> {
  const byRow = new Map<number, ZerosPair[]>();
  for (const p of await pairsInTurn(trx, batchId, range)) byRow.set(Number(p.id), [...(byRow.get(Number(p.id)) ?? []), p]);
  const refusals: ZerosRefusal[] = [];
  for (const [id, pairs] of byRow) {
    const [first] = pairs;
    if (first === undefined) continue;
    const row = { id, line: first.line, from: first.state, code: 'LEADING_ZEROS_LOST' as const };
    const held = pairs.filter((p) => p.other_batch !== batchId).sort(byStanding)[0];
    if (held) refusals.push({ ...row, to: 'DUPLICATE', reason: earlierZerosMessage(first.merchant_reference_id, held) });
    else {
      const others = pairs.map((p) => ({ reference: p.other_reference, line: p.other_line }));
      refusals.push({ ...row, to: 'INVALID', reason: inFileZerosMessage(first.merchant_reference_id, others) });
    }
  }
  return refusals;
}
