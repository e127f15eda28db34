/**
 * BatchHolds: every hold put on or taken off a batch, in one place: at acceptance, when the service refuses a
 * create for the balance, reviews of balance holds due, and the watch of taken files (which can still grow for
 * `watchTakenForMs`). What each decision is lives in ./decide.ts.
 */
import type { Stats } from 'node:fs';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { BALANCE_CHECK_HOLD, type BatchHold } from '../domain/holds.js';
import type { ReadyMoney } from '../domain/ready-money.js';
import {
  fingerprintKey,
  lstatOrNull,
  observe,
  stabilityVerdict,
  takenFileChange,
  verifyUnchanged,
  type Observation,
  type Patience,
} from '../ingest/inbox/index.js';
import { type BatchRecord, type Database, holdBatch, listBalanceHoldsDue, listWatchedBatches, releaseBatchHold } from '../store/index.js';
import type { BalanceVerdict } from './balance-gate.js';
import { balanceRefusedHold, balanceShortHold, fileChangedHold } from './decide.js';

/** Whether the stablecoin balance covers what a batch still has to send (BalanceGate). */
export interface BalanceCheck {
  check(batchId: string, signal?: AbortSignal, ready?: ReadyMoney | null): Promise<BalanceVerdict>;
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
  /** How long after its claim a taken file of a finished batch is watched (config inbox.watchTakenForMs). */
  watchTakenForMs: number;
  /** When a grown file counts as stable again: the inbox's own rules (config inbox.*). */
  patience: Patience;
}

/** A taken file that went on after its claim and is stable again, with no notice yet for what it is now. */
export interface ContinuedUpload {
  batch: BatchRecord;
  size: number;
  /** Whole milliseconds, as the batch record keeps them. */
  mtimeMs: number;
}

/** What a look at the taken files found. */
export interface TakenFileNews {
  /** Batches held FILE_CHANGED by this look (their acks must now say so). */
  held: BatchRecord[];
  /** Files that went on and are stable again: each needs its notice (and remainder) written. */
  continued: ContinuedUpload[];
}

/** Taken files looked at per call at most; the rest are looked at on the next calls, in turn. */
const FILES_PER_LOOK = 500;

/** What the watch keeps of one batch's file between looks. */
interface Watched {
  observation?: Observation;
  /** A change of it was logged and no notice has been written since. */
  warned?: boolean;
}

export class BatchHolds {
  private readonly watched = new Map<string, Watched>();
  /** Where the next look starts among the watched batches (in turn, when there are more than FILES_PER_LOOK). */
  private nextLook = 0;

  constructor(
    private readonly deps: HoldsDeps,
    private readonly o: HoldsOptions,
  ) {}

  /**
   * A batch about to be accepted (not yet claimable): held if its upload went on or its balance is short (unless
   * `balance: false`); `ready`, its READY rows' money when the caller has added it up.
   */
  async atAcceptance(
    batch: BatchRecord,
    o: { balance: boolean; ready?: ReadyMoney | null } = { balance: true },
  ): Promise<BatchHold | null> {
    const changed = await verifyUnchanged(batch);
    if (changed.changed) return this.hold(batch.id, fileChangedHold(changed.reason, 'at-acceptance'));
    const balance = this.deps.balance;
    if (!balance || !o.balance) return null;
    const verdict = await balance.check(batch.id, this.deps.signal, o.ready);
    if (verdict.ok) return null;
    return this.hold(batch.id, balanceShortHold(verdict.reason, this.deps.clock.now(), this.o.balanceRecheckMs));
  }

  /** The service refused a create of the batch for its balance: the batch waits until `until`. */
  async onInsufficientBalance(batchId: string, currency: string, until: number): Promise<void> {
    // Creates in flight together meet the refusal together: only the one that put the hold on tells of it.
    if (await holdBatch(this.deps.db, batchId, balanceRefusedHold(currency, until), this.deps.clock.now()))
      this.deps.logger.error({ batchId, currency }, 'INSUFFICIENT_BALANCE: batch held until the balance is topped up');
  }

  /**
   * Balance holds whose time has come, and approved batches not checked yet: released when the balance covers
   * the batch now, else held (again) for the balance.
   */
  async reviewDue(): Promise<void> {
    const { db, clock, logger } = this.deps;
    // The service unreachable: a balance check could not be made (and the hold would be let go unchecked).
    if (this.deps.serviceAvailable?.() === false) return;
    const now = clock.now();
    for (const { id, holdCode } of await listBalanceHoldsDue(db, now)) {
      const verdict = this.deps.balance ? await this.deps.balance.check(id, this.deps.signal) : { ok: true, reason: null };
      if (verdict.ok) {
        // Only the hold reviewed: one put on meanwhile (the file changed) stays.
        await releaseBatchHold(db, id, clock.now(), 'balance-covered', holdCode);
        const approved = holdCode === BALANCE_CHECK_HOLD;
        logger.info(
          { batchId: id },
          approved ? 'approved batch: the balance covers it; sending' : 'balance hold released: resuming the batch',
        );
      } else {
        await holdBatch(db, id, balanceShortHold(verdict.reason, now, this.o.balanceRecheckMs), now);
        logger.error({ batchId: id }, `batch ${holdCode === BALANCE_CHECK_HOLD ? 'approved but held' : 'still held'}: ${verdict.reason}`);
      }
    }
  }

  /**
   * Looks at each taken file still watched. A change holds an ACTIVE batch FILE_CHANGED once (an operator's
   * release stands); once stable again it is reported in `continued` until a notice describes it.
   */
  async watchTakenFiles(): Promise<TakenFileNews> {
    const { db, clock } = this.deps;
    const now = clock.now();
    const batches = await listWatchedBatches(db, now - this.o.watchTakenForMs);
    const news: TakenFileNews = { held: [], continued: [] };
    const ids = new Set(batches.map((b) => b.id));
    for (const id of this.watched.keys()) if (!ids.has(id)) this.watched.delete(id);
    for (const b of this.inTurn(batches)) {
      let st: Stats | null;
      try {
        st = await lstatOrNull(b.storedPath);
      } catch {
        continue; // unreadable for now (a permission, a dying disk): looked at again on the next pass
      }
      const change = takenFileChange(b, st);
      if (!change.changed) {
        this.watched.delete(b.id);
        continue;
      }
      if (b.state === 'ACTIVE' && b.fileChangedAt === null && b.holdCode !== 'FILE_CHANGED') {
        await this.hold(b.id, fileChangedHold(change.reason, 'while-sending'));
        news.held.push(b);
      }
      if (st === null || !st.isFile()) continue;
      const continued = this.stableAgain(b, st, now);
      if (continued) news.continued.push(continued);
    }
    return news;
  }

  /** The batch's changed file when it is stable again and no notice describes it as it now is (or its batch finished since). */
  private stableAgain(b: BatchRecord, st: Stats, now: number): ContinuedUpload | null {
    const w = this.watched.get(b.id) ?? {};
    this.watched.set(b.id, w);
    const mtimeMs = Math.trunc(st.mtimeMs);
    const noticed = b.uploadContinuedSize === st.size && b.uploadContinuedMtimeMs === mtimeMs;
    // A notice written while the batch was still being paid (held) is written again once it is finished.
    const finishedSince = b.completedAt !== null && b.uploadContinuedAt !== null && b.completedAt > b.uploadContinuedAt;
    if (noticed && !finishedSince) {
      // Described as it is: a later change starts afresh (the time it sat unchanged was no pause of an upload).
      w.warned = false;
      w.observation = undefined;
      return null;
    }
    if (!noticed && !w.warned) {
      w.warned = true;
      this.deps.logger.warn(
        { batchId: b.id, file: b.fileName, state: b.state, takenBytes: b.size, sizeNow: st.size },
        'the upload of a taken file went on after it was taken: nothing after the bytes taken is read; a notice follows once it is stable',
      );
    }
    w.observation = observe(w.observation, fingerprintKey(st, null), now);
    if (!stabilityVerdict(w.observation, now, this.o.patience).stable) return null;
    return { batch: b, size: st.size, mtimeMs };
  }

  /** At most FILES_PER_LOOK of the batches, starting where the last look stopped. */
  private inTurn(batches: BatchRecord[]): BatchRecord[] {
    if (batches.length <= FILES_PER_LOOK) return batches;
    const from = this.nextLook % batches.length;
    this.nextLook = from + FILES_PER_LOOK;
    return [...batches, ...batches].slice(from, from + FILES_PER_LOOK);
  }

  private async hold(batchId: string, hold: BatchHold): Promise<BatchHold> {
    await holdBatch(this.deps.db, batchId, hold, this.deps.clock.now());
    this.deps.logger.error({ batchId }, `batch held: ${hold.reason}`);
    return hold;
  }
}
