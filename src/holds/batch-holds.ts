/**
 * BatchHolds: every hold put on or taken off a batch, in one place. The
 * intake asks it when a batch is accepted (did its file change after the
 * claim? does the balance cover it?), the submitter when the service refuses
 * a create for the balance, and the daemon's loops to review balance holds
 * that fell due. What each decision is lives in ./decide.ts.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { BatchHold } from '../domain/holds.js';
import { verifyUnchanged } from '../ingest/inbox/index.js';
import { type BatchRecord, type Database, holdBatch, listBalanceHoldsDue, listBatchesInStates, releaseBatchHold } from '../store/index.js';
import type { BalanceVerdict } from './balance-gate.js';
import { balanceRefusedHold, balanceShortHold, fileChangedHold } from './decide.js';

/** Whether the stablecoin balance covers what a batch still has to send (BalanceGate). */
export interface BalanceCheck {
  check(batchId: string, signal?: AbortSignal): Promise<BalanceVerdict>;
}

export interface HoldsDeps {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** The balance check (config batch.balanceCheck.enabled); without one a balance hold simply ends when due. */
  balance?: BalanceCheck;
  /** False while the payout service is taken for unreachable: due balance holds wait (no check could be made). */
  serviceAvailable?: () => boolean;
  /** Aborts a balance check in flight (the daemon's stop). */
  signal?: AbortSignal;
}

export interface HoldsOptions {
  /** How long a batch the balance check found short waits before it is checked again. */
  balanceRecheckMs: number;
}

export class BatchHolds {
  constructor(
    private readonly deps: HoldsDeps,
    private readonly o: HoldsOptions,
  ) {}

  /**
   * A batch read whole, about to be accepted: held FILE_CHANGED when its upload went on after the claim,
   * or for its balance when the check finds it short. Called while the batch is not yet claimable, so no
   * create slips out before the hold. Returns the hold put on it, if any.
   */
  async atAcceptance(batch: BatchRecord): Promise<BatchHold | null> {
    const changed = await verifyUnchanged(batch);
    if (changed.changed) return this.hold(batch.id, fileChangedHold(changed.reason, 'at-acceptance'));
    const balance = this.deps.balance;
    if (!balance) return null;
    const verdict = await balance.check(batch.id, this.deps.signal);
    if (verdict.ok) return null;
    return this.hold(batch.id, balanceShortHold(verdict.reason, this.deps.clock.now(), this.o.balanceRecheckMs));
  }

  /** The service refused a create of the batch for its balance: the batch waits until `until`. */
  async onInsufficientBalance(batchId: string, currency: string, until: number): Promise<void> {
    await holdBatch(this.deps.db, batchId, balanceRefusedHold(currency, until), this.deps.clock.now());
    this.deps.logger.error({ batchId, currency }, 'INSUFFICIENT_BALANCE: batch held until the balance is topped up');
  }

  /** Balance holds whose time has come: released when the balance covers the batch now, else held again. */
  async reviewDue(): Promise<void> {
    const { db, clock, logger } = this.deps;
    // The service unreachable: a balance check could not be made (and the hold would be let go unchecked).
    if (this.deps.serviceAvailable?.() === false) return;
    const now = clock.now();
    for (const id of await listBalanceHoldsDue(db, now)) {
      const verdict = this.deps.balance ? await this.deps.balance.check(id, this.deps.signal) : { ok: true, reason: null };
      if (verdict.ok) {
        await releaseBatchHold(db, id, clock.now());
        logger.info({ batchId: id }, 'balance hold released: resuming the batch');
      } else {
        await holdBatch(db, id, balanceShortHold(verdict.reason, now, this.o.balanceRecheckMs), now);
        logger.error({ batchId: id }, `batch still held: ${verdict.reason}`);
      }
    }
  }

  /**
   * An upload can go on after its batch was accepted (the sender's SFTP session still holds the file that
   * was moved): such a batch is held, loudly, before another row of it is sent. Called on every finish pass.
   */
  async watchTakenFiles(): Promise<void> {
    for (const b of await listBatchesInStates(this.deps.db, ['ACTIVE'])) {
      if (b.holdCode === 'FILE_CHANGED') continue;
      const changed = await verifyUnchanged(b);
      if (changed.changed) await this.hold(b.id, fileChangedHold(changed.reason, 'while-sending'));
    }
  }

  private async hold(batchId: string, hold: BatchHold): Promise<BatchHold> {
    await holdBatch(this.deps.db, batchId, hold, this.deps.clock.now());
    this.deps.logger.error({ batchId }, `batch held: ${hold.reason}`);
    return hold;
  }
}
