/**
 * What a row refused because a row of another batch holds its reference is told (src/store/acceptance.ts): how
 * that row stands now (paid, being paid, waiting in a held batch, not paid) and what to do. A payout that was
 * cancelled is sent again under its retry reference, as its batch's retry file has it, never under a new one
 * beside that file: both would be paid.
 */
import { waitText } from '../domain/holds.js';
import { REFERENCE_TAKEN } from '../domain/payout.js';
import { planRetries, DEFAULT_REFERENCE_MAX_LENGTH, PAY_AS_OWN, type RoundPlan } from '../domain/retry-reference.js';
import { decodeRequestValues, PAYOUT_REQUEST_FIELDS } from '../domain/request-values.js';
import type { Database } from './db.js';
import { roundLookup, type RoundRow } from './reports.js';
import { serviceContradicts } from './service-checks.js';

/** The retry files the advice names (src/daemon/outbox.ts writes them). */
export interface RetryFiles {
  /** The outbox name of a batch's retry file (`<name>.retry.csv`); null when `outbox.retryFiles` is off. */
  nameOf: ((batch: { id: string; fileName: string }) => string) | null;
  /** `merchantReferenceId.maxLength`: how a retry reference is spelled (src/domain/retry-reference.ts). */
  referenceMaxLength: number;
}

export const NO_RETRY_FILES: RetryFiles = { nameOf: null, referenceMaxLength: DEFAULT_REFERENCE_MAX_LENGTH };

/** The row of another batch holding the reference, with its batch, as the acceptance reads it. */
export interface HoldingRow {
  merchant_reference_id: string;
  other_batch: string;
  other_line: number;
  other_state: string;
  other_payout: string | null;
  /** Set while payoutd asks the payout service about the row, or once the service contradicted it (src/poll/checks.ts). */
  other_check: string | null;
  other_note: string | null;
  /** The row's reason code: REFERENCE_TAKEN says the service holds a payout of its own under the reference. */
  other_code: string | null;
  other_batch_state: string;
  other_file: string;
  other_hold: string | null;
  other_approval: string | null;
}

/** The row whose batch's retry file offers a retry reference. */
type Offering = Pick<RoundRow, 'state' | 'batch_id' | 'file_name' | 'batch_state'>;

/** Where a payout recorded CANCELLED goes on, as its batch's retry file plans it. */
export type RetryPlan = RoundPlan<RoundRow>;

/** References one lookup names (SQLite binds at most 32,766 values a statement). */
export const REFERENCES_PER_LOOKUP = 5_000;

/** A row the payout service contradicts, as contradictedText names it. */
type ContradictedRow = Pick<
  RoundRow,
  'merchant_reference_id' | 'state' | 'payout_id' | 'batch_id' | 'line' | 'service_check' | 'service_note' | 'reason_code'
>;

/** The holder's own columns. */
function holderRow(h: HoldingRow): ContradictedRow {
  const { merchant_reference_id, other_state: state, other_payout: payout_id, other_batch: batch_id, other_line: line } = h;
  return {
    merchant_reference_id,
    state,
    payout_id,
    batch_id,
    line,
    service_check: h.other_check,
    service_note: h.other_note,
    reason_code: h.other_code,
  };
}

/** A holder recorded CANCELLED that the payout service does not contradict: its payout was not made. */
function plainlyCancelled(h: HoldingRow): boolean {
  return h.other_state === 'CANCELLED' && !serviceContradicts(holderRow(h));
}

/** The retry plan of each plainly cancelled holder, by its reference: the one its batch's retry file carries. */
export async function retryPlans(trx: Database, holders: readonly HoldingRow[], files: RetryFiles): Promise<Map<string, RetryPlan>> {
  const cancelled = holders.filter(plainlyCancelled);
  const references = cancelled.map((h) => h.merchant_reference_id);
  const plans = await planRetries(references, roundLookup(trx), files.referenceMaxLength);
  return new Map(cancelled.map((h, i) => [h.merchant_reference_id, plans[i] as RetryPlan]));
}

/**
 * Of a row the payout service contradicts or is asked about (it may have been paid, or not): what the service
 * said, and what to do before `again` (`this row`, `this retry`) is sent again.
 */
export function contradictedText(r: ContradictedRow, again: string): { said: string; todo: string } {
  const taken = r.reason_code === REFERENCE_TAKEN;
  const payout = taken || r.payout_id === null ? `the payouts held under ${r.merchant_reference_id}` : `payout ${r.payout_id}`;
  // Without a payout of its own, the row was ended although a create of it was tried and may have been paid.
  const said = taken
    ? `the payout service holds a payout under ${r.merchant_reference_id} (REFERENCE_TAKEN: that row's reason, in the result file of batch ${r.batch_id}, names it)`
    : r.payout_id === null
      ? `a create of that row was tried and the payout service may hold a payout under ${r.merchant_reference_id}${r.service_check !== null ? '; payoutd is asking it' : ''}`
      : r.service_check !== null
        ? `a payout.updated event reported otherwise for ${payout} and payoutd is asking the payout service about it`
        : `the payout service reports otherwise for ${payout}`;
  const todo = `check ${payout} with the payout service before sending ${again} again under any reference (payoutd status --batch ${r.batch_id}, line ${r.line}, says what payoutd knows of it)`;
  return { said, todo };
}

/** How the holding row stands, in words, and which advice fits it. */
export function holderStanding(h: HoldingRow): { kind: 'paid' | 'paying' | 'contradicted' | 'not paid'; text: string } {
  // Before the state: a row recorded PAID or REJECTED that the service contradicts may be unpaid or paid.
  if (serviceContradicts(holderRow(h)))
    return {
      kind: 'contradicted',
      text: `recorded ${h.other_state}, but ${contradictedText(holderRow(h), '').said}: it may have been paid`,
    };
  switch (h.other_state) {
    case 'PAID':
      return { kind: 'paid', text: 'PAID' };
    case 'PENDING':
      return { kind: 'paying', text: 'being paid (PENDING)' };
    case 'CREATING':
      return { kind: 'paying', text: 'being sent (CREATING)' };
    case 'UNKNOWN':
      return { kind: 'paying', text: 'sent, its outcome not known yet (UNKNOWN): it may be paid' };
    case 'READY':
      return { kind: 'paying', text: `not sent yet (READY): ${waitText(h.other_hold, h.other_approval) ?? 'waiting to be sent'}` };
    case 'REJECTED':
      return { kind: 'not paid', text: 'refused by the payout service (REJECTED): not paid' };
  }
  return { kind: 'not paid', text: 'cancelled (CANCELLED): not paid' };
}

/** The retry file a row of `by`'s batch is in, as the advice names it. */
function retryFileText(by: Offering, files: RetryFiles): string | null {
  if (files.nameOf === null) return null;
  const name = files.nameOf({ id: by.batch_id, fileName: by.file_name });
  // The file named may be missing or replaced by a later .retry.corrected-<n>.csv: the command writes the current one.
  return by.batch_state === 'COMPLETE'
    ? `the retry file of batch ${by.batch_id} (${name} in the outbox, or its latest .retry.corrected-<n>.csv, or write it again with payoutd retry-file --batch ${by.batch_id})`
    : `the retry file of batch ${by.batch_id} (${name}, written to the outbox once that batch is finished, or payoutd retry-file --batch ${by.batch_id} then)`;
}

/** The fields whose values differ between two stored requests (the reference aside), in the request's order; none once retention cleared `other`. */
export function changedFields(request: string, other: string | null): string[] {
  if (other === null) return [];
  const a = decodeRequestValues(request);
  const b = decodeRequestValues(other);
  return PAYOUT_REQUEST_FIELDS.filter((field, i) => field !== 'merchantReferenceId' && a[i] !== b[i]);
}

/** `a`, `a and b`, `a, b and c`. */
function listText(items: readonly string[]): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1) as string}`;
}

/** Where a retry file (its header is the request's fields, in order) holds these fields: `column K "beneficiary.accountNumber"`. */
function retryColumnsText(fields: readonly string[]): string {
  return listText(fields.map((f) => `column ${String.fromCharCode(65 + (PAYOUT_REQUEST_FIELDS as readonly string[]).indexOf(f))} "${f}"`));
}

/**
 * What to do with a payout the holder did not pay and will not pay: its retry reference (and the retry file with it),
 * or a new reference. `fix`: what to change in the retry file.
 */
function sendAgainText(h: HoldingRow, plan: RetryPlan | undefined, files: RetryFiles, fix: string): string {
  if (h.other_state === 'REJECTED')
    return `give it a new reference, with what the payout service refused put right (its reason is in the result file of batch ${h.other_batch})`;
  // No free round (or none fits the reference's length): the retry file says why, and a new reference of
  // finance's own would pass every check while a later round may be paid.
  if (plan === undefined || plan.kind === 'none')
    return `send it again only from the retry file of batch ${h.other_batch} (write it with payoutd retry-file --batch ${h.other_batch}), ${fix} there: it gives the row its next free retry reference or says why it holds it back; not under a new reference of your own, or it may be paid twice`;
  if (plan.kind === 'retrying') {
    const { row } = plan;
    const where = `line ${row.line} of ${JSON.stringify(row.file_name)} (batch ${row.batch_id})`;
    // A later round was sent directly, not from a retry file: only its reference ties it to this payout.
    const round = plan.later ? `${row.merchant_reference_id}, a later round of it sent directly by ${where},` : null;
    if (row.contradicted) {
      const { said, todo } = contradictedText(row, 'this row');
      const retried = round === null ? `it was retried as ${row.merchant_reference_id} by ${where},` : `${round} is`;
      return `${retried} recorded ${row.state}, but ${said}: it may have been paid; ${todo}`;
    }
    if (round !== null) {
      const then = row.state === 'PAID' ? 'nothing to do' : "wait for that row's outcome";
      return `${round} is ${row.state}: if that is this payout, ${then}; if it is no retry of it, ${PAY_AS_OWN}`;
    }
    return row.state === 'PAID'
      ? `nothing to do: it was retried as ${row.merchant_reference_id} by ${where}, which is PAID`
      : `it is being retried as ${row.merchant_reference_id} by ${where} (${row.state}): wait for that row's outcome`;
  }
  const by: Offering = plan.by ?? {
    state: h.other_state,
    batch_id: h.other_batch,
    file_name: h.other_file,
    batch_state: h.other_batch_state,
  };
  const file = by.state === 'CANCELLED' ? retryFileText(by, files) : null;
  const twice = 'and not under any other reference as well, or it is paid twice';
  return file === null
    ? `send it again as ${plan.reference} in a new file, ${fix}, ${twice}`
    : `send it again as ${plan.reference} from ${file}, ${fix} there, ${twice}`;
}

/**
 * Why a row whose reference a row of another batch holds is not paid, with the same content, and what to do, by
 * how that row stands: paid (nothing to do), being paid or waiting (wait; send again only if it ends unpaid),
 * not paid (its retry reference, or a new one).
 */
export function sameContentMessage(earlier: string, h: HoldingRow, plan: RetryPlan | undefined, files: RetryFiles): string {
  const reference = `the reference ${h.merchant_reference_id}`;
  const standing = holderStanding(h);
  const head = `${reference} was already submitted by ${earlier} with the same content, and that row is ${standing.text}; this row is not paid`;
  switch (standing.kind) {
    case 'paid':
      return `${head}: nothing to do, it is paid; remove the row (a second payment of the same, if one is owed, needs a reference of its own)`;
    case 'paying':
      return `${head}: wait for that row's outcome (payoutd status --batch ${h.other_batch}), and send this row again only if that row ends unpaid: under this reference if it ends NOT_SUBMITTED, from the retry file of that batch if it ends CANCELLED`;
    case 'contradicted':
      return `${head}: ${contradictedText(holderRow(h), 'this row').todo}`;
    case 'not paid':
      return `${head}: ${sendAgainText(h, plan, files, 'with what got it cancelled put right')}`;
  }
}

/**
 * Why a row whose reference a row of another batch holds for a different payout is not paid, and what to do: as
 * sameContentMessage, for the case that this row corrects that payout (its changes named, to be made in the retry
 * file), or else that it is another payout (its own reference).
 */
export function conflictMessage(
  earlier: string,
  h: HoldingRow,
  fields: readonly string[],
  plan: RetryPlan | undefined,
  files: RetryFiles,
): string {
  const reference = `the reference ${h.merchant_reference_id}`;
  const standing = holderStanding(h);
  const differs = fields.length === 0 ? '' : ` (its ${listText(fields)} ${fields.length > 1 ? 'differ' : 'differs'})`;
  const head = `${reference} is already used by ${earlier} for a different payout${differs}, and that row is ${standing.text}; this row is not paid`;
  const own = 'if it is another payout, give it its own reference';
  const values = fields.length === 0 ? "this row's values" : `this row's ${listText(fields)}`;
  switch (standing.kind) {
    case 'paid':
      return `${head}: if this row corrects that payout, it was paid already as that row has it, so do not send it again; ${own}`;
    case 'paying':
      return `${head}: if this row corrects that payout, wait for that row's outcome (payoutd status --batch ${h.other_batch}), and send this row again only if that row ends unpaid: under this reference if it ends NOT_SUBMITTED, from the retry file of that batch with ${values} put in if it ends CANCELLED; ${own}`;
    case 'contradicted':
      return `${head}: if this row corrects that payout, ${contradictedText(holderRow(h), 'this row').todo}; ${own}`;
    case 'not paid':
      if (h.other_state === 'REJECTED')
        return `${head}: give it a new reference (the payout service's reason for refusing that row is in the result file of batch ${h.other_batch})`;
      return `${head}: if this row corrects that payout, ${sendAgainText(h, plan, files, `with ${values} put in ${fields.length === 0 ? 'its row' : retryColumnsText(fields)}`)}; ${own}`;
  }
}
