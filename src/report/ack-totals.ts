/**
 * The first lines of an acknowledgement: per payout currency, the rows of
 * the file and their exact total, how many were accepted and rejected, and
 * the batch's verdict in words. A clerk sees at the top whether the file
 * was taken and what it adds up to, before reading a row.
 */
import { ExactTotal } from '../domain/exact-total.js';
import type { HoldCode } from '../domain/holds.js';
import { Decimal, decimalText } from '../domain/money.js';
import { isSummableAmount } from '../domain/money.js';
import { totalsCurrency } from './summary.js';
import type { AckRow, BatchIdentity, EndedStatus } from './types.js';
import { currencyDecimals } from '../domain/decimals.js';

/** What the whole batch comes to. */
export type BatchVerdict = 'ACCEPTED' | 'PARTLY_ACCEPTED' | 'REJECTED' | 'HELD' | 'CANCELLED';

/** The `verdict` cell of a totals line. */
export const TOTAL_VERDICT = 'TOTAL';

/** Rows and exact amount of one part of a currency's rows. */
export interface RowsAndAmount {
  rows: number;
  /** Exact sum in normal form. */
  amount: string;
}

export interface AckCurrencyTotal extends RowsAndAmount {
  /** Payout currency, upper-cased (totalsCurrency); empty when a row had none. */
  currency: string;
  accepted: RowsAndAmount;
  rejected: RowsAndAmount;
  /** Rows whose amount was not a plain decimal (left out of the amounts). */
  rowsNotSummed: number;
  /** Accepted rows already final when the ack was written (one written late), per status; absent when none. */
  ended?: Partial<Record<EndedStatus, RowsAndAmount>>;
}

export interface AckTotals {
  currencies: readonly AckCurrencyTotal[];
  verdict: BatchVerdict;
  /** The hold of a HELD batch: its words say who lifts it. */
  holdCode?: HoldCode;
}

/** One ack row's money, as the store reads it. */
export interface AckMoneyRow {
  verdict: AckRow['verdict'];
  payoutCurrency: string | null;
  payoutAmount: string | null;
  /** An accepted row already final when the ack is written. */
  ended?: EndedStatus;
}

interface Part {
  rows: number;
  sum: ExactTotal;
}

const part = (): Part => ({ rows: 0, sum: new ExactTotal() });
const done = (p: Part): RowsAndAmount => ({ rows: p.rows, amount: decimalText(p.sum.toDecimal()) });

/** Adds up ack rows per currency, in one pass (pages of a million-row batch). */
export class AckTotalsAccumulator {
  private readonly byCurrency = new Map<
    string,
    { all: Part; accepted: Part; rejected: Part; ended: Map<EndedStatus, Part>; notSummed: number }
  >();

  add(row: AckMoneyRow): void {
    const currency = totalsCurrency(row.payoutCurrency ?? '');
    let c = this.byCurrency.get(currency);
    if (!c) this.byCurrency.set(currency, (c = { all: part(), accepted: part(), rejected: part(), ended: new Map(), notSummed: 0 }));
    const parts = [c.all, row.verdict === 'ACCEPTED' ? c.accepted : c.rejected];
    if (row.verdict === 'ACCEPTED' && row.ended !== undefined) {
      const ended = c.ended.get(row.ended) ?? part();
      c.ended.set(row.ended, ended);
      parts.push(ended);
    }
    const amount = row.payoutAmount ?? '';
    const summable = isSummableAmount(amount);
    for (const p of parts) {
      p.rows += 1;
      if (summable) p.sum.add(amount);
    }
    if (!summable) c.notSummed += 1;
  }

  /** Currencies by code point; a row without a currency last. */
  currencies(): AckCurrencyTotal[] {
    return [...this.byCurrency.entries()]
      .sort(([a], [b]) => (a === '' ? 1 : b === '' ? -1 : a < b ? -1 : a > b ? 1 : 0))
      .map(([currency, c]) => ({
        currency,
        ...done(c.all),
        accepted: done(c.accepted),
        rejected: done(c.rejected),
        rowsNotSummed: c.notSummed,
        ...(c.ended.size > 0 ? { ended: Object.fromEntries(ENDED_STATUSES.flatMap((s) => endedPart(c.ended, s))) } : {}),
      }));
  }
}

/** The statuses an accepted row may already have ended in when a late ack is written, in the order the ack names them. */
export const ENDED_STATUSES: readonly EndedStatus[] = ['PAID', 'CANCELLED', 'REJECTED', 'DISPUTED'];

const endedPart = (parts: ReadonlyMap<EndedStatus, Part>, s: EndedStatus): [EndedStatus, RowsAndAmount][] => {
  const p = parts.get(s);
  return p === undefined ? [] : [[s, done(p)]];
};

/** The verdict of a batch from its ack: a file-level refusal, cancel or hold wins; otherwise what its rows got. */
export function batchVerdict(
  currencies: readonly AckCurrencyTotal[],
  file: { rejected?: boolean; cancelled?: boolean; held?: boolean },
): BatchVerdict {
  if (file.rejected) return 'REJECTED';
  if (file.cancelled) return 'CANCELLED';
  if (file.held) return 'HELD';
  const accepted = currencies.reduce((n, c) => n + c.accepted.rows, 0);
  const rejected = currencies.reduce((n, c) => n + c.rejected.rows, 0);
  if (accepted === 0) return 'REJECTED';
  return rejected === 0 ? 'ACCEPTED' : 'PARTLY_ACCEPTED';
}

const VERDICT_WORDS: Readonly<Record<BatchVerdict, string>> = {
  ACCEPTED: 'every row is accepted and will be paid',
  PARTLY_ACCEPTED: 'the accepted rows will be paid; the rejected rows are not paid (see each row)',
  REJECTED: 'nothing in this file is paid',
  HELD: 'no row not yet sent is paid until an operator releases the batch',
  CANCELLED: 'an operator cancelled the batch: no row not yet sent is paid (see the CANCELLED line)',
};

/** HELD for the holds `payoutd release` does not lift: an approval is lifted by its approvers (docs/approval.md). */
const HELD_WORDS: Partial<Readonly<Record<HoldCode, string>>> = {
  AWAITING_APPROVAL:
    'no row is paid until the batch is approved by its approvers, other than its uploader (an approval file or `payoutd approve`; see the HELD line)',
};

/** What an accepted row already ended as means for its payment, in the ack's totals lines and in its own reason. */
const ENDED_WORDS: Readonly<Record<EndedStatus, { counted: string; meaning: string }>> = {
  PAID: { counted: 'already paid', meaning: 'rows already paid are paid' },
  CANCELLED: { counted: 'already cancelled by the payout service', meaning: 'rows already cancelled by the payout service are not paid' },
  REJECTED: { counted: 'already refused by the payout service', meaning: 'rows already refused by the payout service are not paid' },
  DISPUTED: {
    counted: 'recorded final but contradicted by the payout service',
    meaning: 'rows the payout service contradicts are being settled with it: do not send them again',
  },
};

/** The reason cell of an accepted row already final when the ack was written: the ack must not promise it a payment. */
export function endedRowText(status: Exclude<EndedStatus, 'DISPUTED'>): string {
  const when = 'when this acknowledgement was written';
  return status === 'PAID'
    ? `already PAID ${when} (see the result file)`
    : `${status === 'CANCELLED' ? 'already CANCELLED' : 'already REFUSED'} by the payout service ${when}: not paid (the result file says why)`;
}

/**
 * The reason cell of an accepted row recorded final that the payout service has since contradicted (`note`), or is
 * being asked about: its outcome is not stated, as the result file does not state it either.
 */
export function disputedRowText(recorded: string, contradicted: boolean): string {
  const service = contradicted ? 'the payout service contradicts it' : 'the payout service is being asked about it';
  return `recorded ${recorded} when this acknowledgement was written; ${service}: do not send it again (see the result file)`;
}

/** Accepted rows over the batch: those already ended, per status, and those not. */
function acceptedRowsByEnd(currencies: readonly AckCurrencyTotal[]): { ended: Set<EndedStatus>; open: number } {
  const ended = new Set<EndedStatus>();
  let open = 0;
  for (const c of currencies) {
    open += c.accepted.rows;
    for (const s of ENDED_STATUSES) {
      const n = c.ended?.[s]?.rows ?? 0;
      if (n > 0) ended.add(s);
      open -= n;
    }
  }
  return { ended, open };
}

/**
 * An ack written late (the outbox could not take it at intake) meets rows already final: the words of an
 * accepted batch say what each kind of row comes to, never that a row already cancelled will be paid.
 */
function lateWords(verdict: 'ACCEPTED' | 'PARTLY_ACCEPTED', byEnd: { ended: Set<EndedStatus>; open: number }): string {
  const clauses = [
    ...ENDED_STATUSES.filter((s) => byEnd.ended.has(s)).map((s) => ENDED_WORDS[s].meaning),
    ...(byEnd.open > 0 ? ['the other accepted rows will be paid'] : []),
  ].join('; ');
  return verdict === 'ACCEPTED'
    ? `every row is accepted, but this acknowledgement was written late, after some rows had ended: ${clauses} (see each row)`
    : `this acknowledgement was written late, after some rows had ended: ${clauses}; the rejected rows are not paid (see each row)`;
}

function verdictWords(verdict: BatchVerdict, holdCode: HoldCode | undefined, currencies: readonly AckCurrencyTotal[]): string {
  if (verdict === 'ACCEPTED' || verdict === 'PARTLY_ACCEPTED') {
    const byEnd = acceptedRowsByEnd(currencies);
    if (byEnd.ended.size > 0) return lateWords(verdict, byEnd);
  }
  return (verdict === 'HELD' && holdCode !== undefined ? HELD_WORDS[holdCode] : undefined) ?? VERDICT_WORDS[verdict];
}

/** An amount as the clerk reads it: exact, with at least the currency's decimals (`1500.5` PHP -> `1500.50`). */
export function shownAmount(amount: string, currency: string, overrides?: Readonly<Record<string, number>>): string {
  const own = amount.includes('.') ? amount.length - amount.indexOf('.') - 1 : 0;
  const decimals = currencyDecimals(currency, overrides);
  return decimals === undefined || decimals <= own ? amount : new Decimal(amount).toFixed(decimals);
}

const rowsWord = (n: number): string => `${n} ${n === 1 ? 'row' : 'rows'}`;

/** One currency's rows and amounts as a totals line gives them, before the batch's verdict (`payoutd validate` too). */
export function ackMoneyText(t: AckCurrencyTotal, overrides?: Readonly<Record<string, number>>): string {
  const money = (p: RowsAndAmount): string => `${rowsWord(p.rows)}, ${shownAmount(p.amount, t.currency, overrides)}`;
  const endedParts = ENDED_STATUSES.flatMap((s) => {
    const p = t.ended?.[s];
    return p === undefined ? [] : [`${ENDED_WORDS[s].counted} ${money(p)}`];
  });
  const ended = endedParts.length > 0 ? `; of the accepted: ${endedParts.join('; ')}` : '';
  const notSummed = t.rowsNotSummed > 0 ? `; ${rowsWord(t.rowsNotSummed)} without a readable amount, not in the sums` : '';
  return `${t.currency || 'no currency'}: ${money(t)} (accepted ${money(t.accepted)}; rejected ${money(t.rejected)}${ended}${notSummed})`;
}

/** The totals lines an ack starts with: one per currency, or one saying no row was read. */
export function ackTotalsRecords(
  identity: Pick<BatchIdentity, 'batchId' | 'fileName'>,
  totals: AckTotals,
  overrides?: Readonly<Record<string, number>>,
): string[][] {
  const lead = (text: string): string[] => [identity.batchId, identity.fileName, '', '', TOTAL_VERDICT, text];
  const { verdict, holdCode, currencies } = totals;
  // The verdict's words speak of the whole batch (rows already ended in any currency): the same on every line.
  const words = `Batch ${verdict}: ${verdictWords(verdict, holdCode, currencies)}`;
  if (currencies.length === 0) return [lead(`no rows read. ${words}`)];
  return currencies.map((t) => lead(`${ackMoneyText(t, overrides)}. ${words}`));
}
