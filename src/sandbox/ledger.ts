/** The sandbox's books: balances and every payout, indexed by payoutId and reference. Debits and refunds; no policy, no IO. */
import { Decimal, decimalText, isPlainDecimal } from '../domain/money.js';
import type { CreatedPayout, PayoutRecord } from '../domain/payout.js';
import { SandboxError } from './errors.js';

/** A payout as the sandbox recorded it: the contract's record plus who and where to. */
export interface LedgerEntry extends PayoutRecord {
  merchantCode: string;
  accountNumber: string;
}

/** A payout held by the ledger; `entry` changes only through `complete` (and is replaced whole by `reverse`). */
export interface StoredPayout {
  readonly entry: LedgerEntry;
  /** The create response data (spec 2.5), kept to answer a duplicate with the original. */
  readonly created: CreatedPayout;
}

export type NewPayout = Omit<LedgerEntry, 'status' | 'completeTime' | 'failureReason'>;

/** One change of the books, as the call that made it: replaying changes through `apply` rebuilds the books. */
export type LedgerChange =
  | { kind: 'record'; payout: NewPayout }
  | { kind: 'complete'; payoutId: string; status: 'PAID' | 'CANCELLED'; completeTime: string; failureReason: string | null }
  | { kind: 'reverse'; payoutId: string; status: 'PAID' | 'CANCELLED'; completeTime: string; failureReason: string | null }
  | { kind: 'balance'; merchantCode: string; currency: string; amount: string };

/** Everything the ledger holds, as JSON-safe data (amounts as decimal text). */
export interface LedgerSnapshot {
  balances: Record<string, Record<string, string>>;
  payouts: readonly { readonly entry: LedgerEntry; readonly created: CreatedPayout }[];
}

function refKey(merchantCode: string, merchantReferenceId: string): string {
  return `${merchantCode}\u0000${merchantReferenceId}`;
}

export class Ledger {
  private readonly all: StoredPayout[] = [];
  private readonly byPayoutId = new Map<string, StoredPayout>();
  private readonly byReference = new Map<string, StoredPayout[]>();
  private readonly balances = new Map<string, Map<string, Decimal>>();
  private pending = 0;
  /** Called after every change with the change (persistence: the journal of `stateFile`). */
  onChange: ((change: LedgerChange) => void) | null = null;

  constructor(merchants: Iterable<{ merchantCode: string; balances: Record<string, string> }>) {
    for (const m of merchants) {
      const book = new Map<string, Decimal>();
      for (const [currency, amount] of Object.entries(m.balances)) book.set(currency, new Decimal(amount));
      this.balances.set(m.merchantCode, book);
    }
  }

  private book(merchantCode: string): Map<string, Decimal> {
    const book = this.balances.get(merchantCode);
    if (!book) throw new SandboxError('SANDBOX_UNKNOWN_MERCHANT', `no merchant ${merchantCode} in this sandbox`);
    return book;
  }

  available(merchantCode: string, currency: string): Decimal {
    return this.book(merchantCode).get(currency) ?? new Decimal(0);
  }

  setBalance(merchantCode: string, currency: string, amount: string): void {
    if (!isPlainDecimal(amount))
      throw new SandboxError('SANDBOX_BAD_AMOUNT', `balance of ${currency} must be a plain non-negative decimal`);
    this.book(merchantCode).set(currency, new Decimal(amount));
    this.onChange?.({ kind: 'balance', merchantCode, currency, amount });
  }

  /** Balances as normal-form decimal text, in configuration order. */
  balanceSnapshot(merchantCode: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [currency, amount] of this.book(merchantCode)) out[currency] = decimalText(amount);
    return out;
  }

  findById(payoutId: string): StoredPayout | undefined {
    return this.byPayoutId.get(payoutId);
  }

  findByReference(merchantCode: string, merchantReferenceId: string): readonly StoredPayout[] {
    return this.byReference.get(refKey(merchantCode, merchantReferenceId)) ?? [];
  }

  /** Every payout with this reference, whichever merchant (admin settle). */
  findByReferenceAnyMerchant(merchantReferenceId: string): StoredPayout[] {
    const out: StoredPayout[] = [];
    for (const merchantCode of this.balances.keys()) out.push(...this.findByReference(merchantCode, merchantReferenceId));
    return out;
  }

  hasPayoutId(payoutId: string): boolean {
    return this.byPayoutId.has(payoutId);
  }

  /** Debits deductionAmount and records the payout as PENDING. The caller checked the balance. */
  record(payout: NewPayout): StoredPayout {
    const book = this.book(payout.merchantCode);
    const available = book.get(payout.deductionCurrency) ?? new Decimal(0);
    book.set(payout.deductionCurrency, available.minus(payout.deductionAmount));
    const stored: StoredPayout = {
      entry: { ...payout, status: 'PENDING', completeTime: null, failureReason: null },
      created: {
        payoutId: payout.payoutId,
        merchantReferenceId: payout.merchantReferenceId,
        rate: payout.rate,
        deductionAmount: payout.deductionAmount,
        totalFee: payout.totalFee,
        feeCurrency: payout.feeCurrency,
      },
    };
    this.all.push(stored);
    this.byPayoutId.set(payout.payoutId, stored);
    const key = refKey(payout.merchantCode, payout.merchantReferenceId);
    const same = this.byReference.get(key);
    if (same) same.push(stored);
    else this.byReference.set(key, [stored]);
    this.pending++;
    this.onChange?.({ kind: 'record', payout });
    return stored;
  }

  /** PENDING -> PAID or CANCELLED (refunding deductionAmount); false when the payout was not PENDING. */
  complete(stored: StoredPayout, status: 'PAID' | 'CANCELLED', completeTime: string, failureReason: string | null): boolean {
    const entry = stored.entry;
    if (entry.status !== 'PENDING') return false;
    entry.status = status;
    entry.completeTime = completeTime;
    entry.failureReason = status === 'CANCELLED' ? failureReason : null;
    if (status === 'CANCELLED') {
      const book = this.book(entry.merchantCode);
      const available = book.get(entry.deductionCurrency) ?? new Decimal(0);
      book.set(entry.deductionCurrency, available.plus(entry.deductionAmount));
    }
    this.pending--;
    this.onChange?.({ kind: 'complete', payoutId: entry.payoutId, status, completeTime, failureReason: entry.failureReason });
    return true;
  }

  /**
   * A final payout moved to the other final status, as a service reversing its outcome would (tests only: spec 3
   * shows no such move). The deduction is refunded, or debited again. The entry is replaced, not changed: a
   * snapshot being written keeps final entries as they are. Returns the new payout; null when it was not final
   * or already in `status`.
   */
  reverse(stored: StoredPayout, status: 'PAID' | 'CANCELLED', completeTime: string, failureReason: string | null): StoredPayout | null {
    const old = stored.entry;
    if (old.status === 'PENDING' || old.status === status) return null;
    const entry: LedgerEntry = { ...old, status, completeTime, failureReason: status === 'CANCELLED' ? failureReason : null };
    const book = this.book(entry.merchantCode);
    const available = book.get(entry.deductionCurrency) ?? new Decimal(0);
    book.set(
      entry.deductionCurrency,
      status === 'CANCELLED' ? available.plus(entry.deductionAmount) : available.minus(entry.deductionAmount),
    );
    const next: StoredPayout = { entry, created: stored.created };
    this.all[this.all.indexOf(stored)] = next;
    this.byPayoutId.set(entry.payoutId, next);
    const same = this.byReference.get(refKey(entry.merchantCode, entry.merchantReferenceId)) ?? [];
    same[same.indexOf(stored)] = next;
    this.onChange?.({ kind: 'reverse', payoutId: entry.payoutId, status, completeTime, failureReason: entry.failureReason });
    return next;
  }

  get pendingCount(): number {
    return this.pending;
  }

  /** How many payouts the books hold. */
  get size(): number {
    return this.all.length;
  }

  /** The payouts still PENDING, in creation order (to plan their settlement after a restart). */
  pendingPayouts(): StoredPayout[] {
    return this.all.filter((p) => p.entry.status === 'PENDING');
  }

  /** Replays a change reported by `onChange` (a journal line); changes that no longer fit are skipped. */
  apply(change: LedgerChange): void {
    if (change.kind === 'record') {
      if (this.balances.has(change.payout.merchantCode) && !this.byPayoutId.has(change.payout.payoutId)) this.record(change.payout);
    } else if (change.kind === 'complete') {
      const stored = this.byPayoutId.get(change.payoutId);
      if (stored) this.complete(stored, change.status, change.completeTime, change.failureReason);
    } else if (change.kind === 'reverse') {
      const stored = this.byPayoutId.get(change.payoutId);
      if (stored) this.reverse(stored, change.status, change.completeTime, change.failureReason);
    } else if (this.balances.has(change.merchantCode)) {
      this.setBalance(change.merchantCode, change.currency, change.amount);
    }
  }

  snapshot(): LedgerSnapshot {
    const balances: Record<string, Record<string, string>> = {};
    for (const code of this.balances.keys()) balances[code] = this.balanceSnapshot(code);
    // A final payout never changes again, so it is kept as it is; a PENDING one is copied: a snapshot is
    // written out while the ledger goes on changing.
    return { balances, payouts: this.all.map((p) => (p.entry.status === 'PENDING' ? { entry: { ...p.entry }, created: p.created } : p)) };
  }

  /** Loads a snapshot taken by `snapshot()` into a fresh ledger; returns the payouts restored. */
  restore(snap: LedgerSnapshot): StoredPayout[] {
    for (const [code, book] of Object.entries(snap.balances)) {
      if (!this.balances.has(code)) continue;
      for (const [currency, amount] of Object.entries(book)) this.book(code).set(currency, new Decimal(amount));
    }
    const restored: StoredPayout[] = [];
    for (const p of snap.payouts) {
      if (!this.balances.has(p.entry.merchantCode)) continue;
      const stored: StoredPayout = { entry: { ...p.entry }, created: { ...p.created } };
      this.all.push(stored);
      this.byPayoutId.set(stored.entry.payoutId, stored);
      const key = refKey(stored.entry.merchantCode, stored.entry.merchantReferenceId);
      this.byReference.set(key, [...(this.byReference.get(key) ?? []), stored]);
      if (stored.entry.status === 'PENDING') this.pending++;
      restored.push(stored);
    }
    return restored;
  }

  /** Copies of every payout, in creation order. */
  entries(): LedgerEntry[] {
    return this.all.map((p) => ({ ...p.entry }));
  }
}
