/**
 * What finance is told of a file whose bytes an earlier batch already has (DUPLICATE_FILE): what that batch did
 * with its rows (paid, being paid, not paid and why) and what to do about each, or, while that file is still
 * being read (it may yet be refused whole), that it is and what to do if it is refused. "Nothing is paid again"
 * alone reads as "all was paid" for a batch that paid nothing.
 */
import { waitText } from '../domain/holds.js';
import type { RowState } from '../domain/lifecycle.js';
import type { BatchRecord, StateCounts, StateReason } from '../store/index.js';

/** What the earlier batch did with its rows: counts per state, and why its NOT_SUBMITTED rows were not sent. */
export interface EarlierOutcome {
  counts: StateCounts;
  notSubmitted: readonly StateReason[];
  /** Rows, per state, whose recorded outcome the payout service contradicts or may (contradictedCounts): counted apart. */
  contradicted: StateCounts;
}

/** The earlier batch as the message names it. */
type Earlier = Pick<BatchRecord, 'id' | 'fileName' | 'receivedAt' | 'state' | 'holdCode' | 'approvalState'>;

const BEING_PAID: readonly RowState[] = ['READY', 'CREATING', 'UNKNOWN', 'PENDING'];

/** `1 row` / `2 rows`. */
function rows(n: number): string {
  return `${n} row${n === 1 ? '' : 's'}`;
}

/** The word for one row, or for several. */
function agree(n: number, one: string, several: string): string {
  return n === 1 ? one : several;
}

/** A row reason as finance reads it: its code, then its words unless they already start with it. */
function reasonWords(r: StateReason): string {
  if (r.reason === null) return r.code ?? 'no reason recorded';
  return r.code !== null && !r.reason.startsWith(r.code) ? `${r.code}: ${r.reason}` : r.reason;
}

/** The parts of the message on the rows in each state, and what to do about them. */
function outcomeParts(earlier: Earlier, o: EarlierOutcome, retryFile: string | null): { did: string[]; todo: string[] } {
  // A row the service contradicts is counted apart: its state may say "not paid" of a payout that was paid.
  const plain = (s: RowState): number => Math.max(0, (o.counts[s] ?? 0) - (o.contradicted[s] ?? 0));
  const n = (states: readonly RowState[]): number => states.reduce((sum, s) => sum + plain(s), 0);
  const did: string[] = [];
  const todo: string[] = [];
  const since = `unless sent again since (see payoutd status --batch ${earlier.id} and the later batches' result files)`;
  const doubted = Object.values(o.contradicted).reduce((sum, k) => sum + (k ?? 0), 0);
  if (doubted > 0) {
    did.push(`${doubted} the payout service contradicts (recorded one way, reported or held otherwise: may be paid)`);
    todo.push(
      `for the ${rows(doubted)} the payout service contradicts, check ${agree(doubted, 'its payout', 'their payouts')} with the payout service (payoutd status --batch ${earlier.id} names ${agree(doubted, 'it', 'them')}) before sending ${agree(doubted, 'it', 'them')} again under any reference`,
    );
  }
  const paid = n(['PAID']);
  if (paid > 0) {
    did.push(`${paid} paid`);
    todo.push(
      `the ${rows(paid)} paid must never be sent again, under ${agree(paid, 'its reference or a new one: it', 'these references or new ones: they')} would be paid twice`,
    );
  }
  const paying = n(BEING_PAID);
  if (paying > 0) {
    const waiting = o.counts.READY ?? 0;
    const why = waitText(earlier.holdCode, earlier.approvalState);
    did.push(`${paying} being paid or to be paid${waiting > 0 ? ` (${waiting} not sent yet${why === null ? '' : `, ${why}`})` : ''}`);
    todo.push(
      `wait for the outcome of the ${rows(paying)} being paid (payoutd status --batch ${earlier.id}): one that ends CANCELLED is sent again from that batch's retry file, one that ends NOT_SUBMITTED in a new file under its reference`,
    );
  }
  const notSubmitted = n(['NOT_SUBMITTED']);
  if (notSubmitted > 0) {
    const why = o.notSubmitted.map((r) => (o.notSubmitted.length > 1 ? `${r.rows}: ${reasonWords(r)}` : reasonWords(r))).join('; ');
    did.push(`${notSubmitted} not sent (NOT_SUBMITTED${why === '' ? '' : `: ${why}`})`);
  }
  const invalid = n(['INVALID']);
  if (invalid > 0) did.push(`${invalid} invalid (INVALID, see its ack)`);
  // Rows never sent hold no reference (REFERENCE_FREE_STATES): their references may be used again as they are.
  if (notSubmitted + invalid > 0) {
    todo.push(
      `the ${rows(notSubmitted + invalid)} never sent (${[notSubmitted > 0 ? 'NOT_SUBMITTED' : '', invalid > 0 ? 'INVALID' : ''].filter(Boolean).join(', ')}) can be sent again under the same ${agree(notSubmitted + invalid, 'reference, in a new file holding it, put right as its reason says', 'references, in a new file holding them, put right as their reasons say')} (a file with exactly these bytes is refused again), ${since}`,
    );
  }
  const duplicate = n(['DUPLICATE']);
  if (duplicate > 0) {
    did.push(`${duplicate} refused for a reference another row holds (DUPLICATE)`);
    todo.push(`for the ${rows(duplicate)} DUPLICATE, do as the ack of batch ${earlier.id} says of each`);
  }
  const cancelled = n(['CANCELLED']);
  if (cancelled > 0) {
    did.push(`${cancelled} cancelled by the payout service (CANCELLED)`);
    const later = earlier.state === 'COMPLETE' ? '' : ', written once that batch is finished';
    const from =
      retryFile === null
        ? `that batch's retry file (payoutd retry-file --batch ${earlier.id})`
        : `that batch's retry file (${retryFile}${later}, or its latest .retry.corrected-<n>.csv, or write it again with payoutd retry-file --batch ${earlier.id})`;
    todo.push(
      `the ${rows(cancelled)} CANCELLED ${agree(cancelled, 'is sent again from ' + from + ', under the reference it gives it, and under no new reference', 'are sent again from ' + from + ', under the references it gives them, and under no new references')} of your own as well (both would be paid), ${since}`,
    );
  }
  const rejected = n(['REJECTED']);
  if (rejected > 0) {
    did.push(`${rejected} refused by the payout service (REJECTED)`);
    todo.push(
      `the ${rows(rejected)} REJECTED ${agree(rejected, 'needs a new reference', 'need new references')}, with what the service refused put right (the result file of batch ${earlier.id} says why), ${since}`,
    );
  }
  return { did, todo };
}

/**
 * The DUPLICATE_FILE reason: the earlier batch by id, file and time; while it is being read (`outcome` null), that
 * it is and what to do if it is refused; else what it did with its rows, and what to do. `retryFile`: the earlier
 * batch's retry file.
 */
export function duplicateFileMessage(sha256: string, earlier: Earlier, outcome: EarlierOutcome | null, retryFile: string | null): string {
  const when = new Date(earlier.receivedAt).toISOString();
  const content = `(sha256 ${sha256.slice(0, 12)}…)`;
  if (outcome === null) {
    // A refused file paid nothing and no longer counts as a first copy (findFirstBySha): its bytes are read anew.
    return (
      `duplicate file: a file with the same content ${content} is being read now, as batch ${earlier.id} ("${earlier.fileName}", received ${when}); ` +
      'this copy is not read and pays nothing: that file pays its rows if it is accepted, as its ack will say. ' +
      'If that file is refused (its ack says REJECTED), neither pays anything: put right what its ack names and drop the file again'
    );
  }
  const total = Object.values(outcome.counts).reduce((sum, n) => sum + (n ?? 0), 0);
  const { did, todo } = outcomeParts(earlier, outcome, retryFile);
  const state = earlier.state === 'COMPLETE' ? 'finished' : 'not finished yet';
  const parts = did.length === 0 ? 'no row' : did.join(', ');
  return (
    `duplicate file: the same content ${content} was received as batch ${earlier.id} ("${earlier.fileName}", ${when}), ${state}: of its ${rows(total)}, ${parts}; ` +
    `this copy is not read and pays nothing. What to do: ${todo.length === 0 ? 'nothing' : todo.join('; ')}`
  );
}
