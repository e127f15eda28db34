/** A payout's life after create: which way and when it settles, the PENDING -> PAID/CANCELLED move, its webhook. */
import type { Clock } from '../domain/clock.js';
import { maskAccountNumber } from '../domain/payout.js';
import type { Ledger, StoredPayout } from './ledger.js';
import type { SandboxLogger } from './logger.js';
import type { SettlementOptions } from './options.js';
import type { Random } from './random.js';
import { SettlementQueue, type DueSettlement } from './settlement.js';
import type { SandboxStats } from './stats.js';
import type { WebhookDispatcher, WebhookTarget } from './webhooks.js';

export const CANCEL_REASON = 'BENEFICIARY_ACCOUNT_CLOSED';
export const MANUAL_CANCEL_REASON = 'CANCELLED_BY_SANDBOX';

export interface LifecycleDeps {
  ledger: Ledger;
  settlement: SettlementOptions;
  random: Random;
  clock: Clock;
  stats: SandboxStats;
  logger: SandboxLogger;
  webhooks: WebhookDispatcher;
  webhookTargets: ReadonlyMap<string, WebhookTarget>;
}

export type SettleSelect = { payoutId?: string; merchantReferenceId?: string };

export class PayoutLifecycle {
  private readonly queue: SettlementQueue;

  constructor(private readonly deps: LifecycleDeps) {
    this.queue = new SettlementQueue(
      (due) => this.due(due),
      (err, due) => deps.logger.error({ payoutId: due.payoutId, err: String(err) }, 'settlement failed'),
    );
  }

  /** Plans the settlement of a payout just created. */
  created(stored: StoredPayout): void {
    const { settlement, random } = this.deps;
    const account = stored.entry.accountNumber;
    // Hold wins when an account number ends in both suffixes.
    if (account.endsWith(settlement.holdSuffix)) return;
    const outcome = account.endsWith(settlement.cancelSuffix) ? 'CANCELLED' : 'PAID';
    this.queue.schedule(stored.entry.payoutId, random.int(settlement.minDelayMs, settlement.maxDelayMs), outcome);
  }

  /** Moves a PENDING payout to a terminal state; false when it was already terminal. */
  complete(stored: StoredPayout, status: 'PAID' | 'CANCELLED', failureReason: string | null): boolean {
    const { ledger, clock, stats } = this.deps;
    const completeTime = new Date(clock.now()).toISOString();
    if (!ledger.complete(stored, status, completeTime, failureReason)) return false;
    if (status === 'PAID') stats.paid++;
    else stats.cancelled++;
    this.announce(stored.entry, 'payout settled');
    return true;
  }

  /**
   * reverse() / POST /__sandbox/reverse: a PAID or CANCELLED payout moved to the other final status, with its
   * payout.updated event, as a service reversing its outcome would (a test control: spec 3 shows no such move).
   * False when the payout is unknown, PENDING or already in `status`.
   */
  reverse(payoutId: string, status: 'PAID' | 'CANCELLED'): boolean {
    const { ledger, clock } = this.deps;
    const stored = ledger.findById(payoutId);
    if (!stored) return false;
    const next = ledger.reverse(stored, status, new Date(clock.now()).toISOString(), status === 'CANCELLED' ? MANUAL_CANCEL_REASON : null);
    if (!next) return false;
    this.announce(next.entry, 'payout reversed');
    return true;
  }

  /** The log line and the webhook of a payout that reached a final status. */
  private announce(e: StoredPayout['entry'], what: string): void {
    const { logger, webhooks, webhookTargets } = this.deps;
    logger.info(
      {
        payoutId: e.payoutId,
        merchantCode: e.merchantCode,
        merchantReferenceId: e.merchantReferenceId,
        status: e.status,
        account: maskAccountNumber(e.accountNumber),
      },
      what,
    );
    const target = webhookTargets.get(e.merchantCode);
    if (target) {
      webhooks.send(target, {
        payoutId: e.payoutId,
        merchantReferenceId: e.merchantReferenceId,
        status: e.status,
        completeTime: e.completeTime,
      });
    }
  }

  /** settle() / POST /__sandbox/settle: moves every matching PENDING payout; returns how many moved. */
  settle(select: SettleSelect, status: 'PAID' | 'CANCELLED'): number {
    const { ledger } = this.deps;
    let candidates: StoredPayout[] = [];
    if (select.payoutId !== undefined) {
      const one = ledger.findById(select.payoutId);
      candidates = one ? [one] : [];
    }
    if (select.merchantReferenceId !== undefined) {
      const byRef = ledger.findByReferenceAnyMerchant(select.merchantReferenceId);
      candidates = select.payoutId !== undefined ? candidates.filter((c) => byRef.includes(c)) : byRef;
    }
    let moved = 0;
    for (const c of candidates) if (this.complete(c, status, status === 'CANCELLED' ? MANUAL_CANCEL_REASON : null)) moved++;
    return moved;
  }

  get scheduled(): number {
    return this.queue.size;
  }

  close(): void {
    this.queue.close();
  }

  private due({ payoutId, outcome }: DueSettlement): void {
    const stored = this.deps.ledger.findById(payoutId);
    // A payout settled by hand in the meantime is simply skipped (complete returns false).
    if (stored) this.complete(stored, outcome, outcome === 'CANCELLED' ? CANCEL_REASON : null);
  }
}
