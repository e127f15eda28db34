/**
 * SettlementPoller: follows PENDING payouts to PAID or CANCELLED by querying
 * them in chunks of the service's max ids per call, each payout on its own
 * backoff schedule. The query is the source of truth (spec 1.6); webhooks only
 * make a payout due sooner. A payout pending too long is flagged loudly,
 * never dropped.
 */
import type { Logger } from 'pino';
import { isApiError } from '../api/errors.js';
import type { Clock } from '../domain/clock.js';
import type { PayoutRecord, PayoutService } from '../domain/payout.js';
import type { Database } from '../store/db.js';
import type { PayoutRow } from '../store/payouts.js';
import { flagStale, listStalePending, nextPollDue } from '../store/settlement.js';
import { applyRowMoves, claimDueRows, type RowMove } from '../store/submission.js';
import { adoptRecord } from '../submit/outcome.js';

export interface PollerOptions {
  /** Ids per query call (the contract's max). */
  queryMaxIds: number;
  /** Queries per pass at most (bounds one pass; the rest wait for the next). */
  maxCallsPerPass: number;
  /** Poll interval after the first poll; doubles per poll up to maxIntervalMs. */
  minIntervalMs: number;
  maxIntervalMs: number;
  /** A payout PENDING longer than this is flagged. */
  staleAfterMs: number;
  /** Payouts taken for a query are not due for anyone else for this long (several instances). */
  leaseMs: number;
}

export interface PollerDeps {
  db: Database;
  service: PayoutService;
  clock: Clock;
  logger: Logger;
  onPolled?: (payouts: number, lagMs: number) => void;
}

/** Delay before the next poll of a payout that has been polled `count` times. */
export function nextPollDelay(count: number, o: Pick<PollerOptions, 'minIntervalMs' | 'maxIntervalMs'>): number {
  return Math.min(o.maxIntervalMs, o.minIntervalMs * 2 ** Math.min(20, Math.max(0, count - 1)));
}

export class SettlementPoller {
  constructor(
    private readonly deps: PollerDeps,
    private readonly o: PollerOptions,
  ) {}

  /** One pass over due payouts; returns how many reached a final status. */
  async runOnce(signal: AbortSignal): Promise<number> {
    const { db, clock, logger } = this.deps;
    let settled = 0;
    for (let call = 0; call < this.o.maxCallsPerPass && !signal.aborted; call++) {
      const now = clock.now();
      const oldestDue = await nextPollDue(db);
      if (oldestDue === null || oldestDue > now) break;
      // Taken in one statement, so instances sharing the database never ask about the same payout in a cycle.
      const due = await claimDueRows(db, 'PENDING', 'next_poll_at', now, this.o.queryMaxIds, this.o.leaseMs);
      if (due.length === 0) break;
      let records: PayoutRecord[];
      try {
        records = await this.deps.service.queryByPayoutIds(
          due.map((r) => r.payoutId as string),
          signal,
        );
      } catch (err) {
        logger.warn({ err: isApiError(err) ? err.toLog() : { code: 'UNEXPECTED' } }, 'payout query failed; will retry');
        await this.reschedule(due, clock.now() + this.o.minIntervalMs);
        break;
      }
      this.deps.onPolled?.(due.length, Math.max(0, now - oldestDue));
      settled += await this.apply(due, records);
      if (due.length < this.o.queryMaxIds) break;
    }
    await this.flagStale();
    return settled;
  }

  private async apply(due: PayoutRow[], records: PayoutRecord[]): Promise<number> {
    const { db, clock, logger } = this.deps;
    const byId = new Map(records.map((r) => [r.payoutId, r]));
    const now = clock.now();
    const moves: RowMove[] = [];
    for (const row of due) {
      const rec = byId.get(row.payoutId as string);
      const polled = { pollCount: row.pollCount + 1, lastPolledAt: now };
      if (!rec) {
        logger.error(
          { batchId: row.batchId, line: row.line, payoutId: row.payoutId },
          'the service does not know a payout it created; still following it',
        );
        moves.push({
          row,
          from: 'PENDING',
          to: 'PENDING',
          patch: { ...polled, nextPollAt: now + this.o.maxIntervalMs },
          history: { event: 'polled', outcome: 'NOT_FOUND', detail: 'payoutId not found by query' },
        });
      } else if (rec.status === 'PENDING') {
        moves.push({
          row,
          from: 'PENDING',
          to: 'PENDING',
          patch: { ...polled, nextPollAt: now + nextPollDelay(row.pollCount + 1, this.o) },
          history: { event: 'polled', outcome: 'PENDING' },
        });
      } else {
        const a = adoptRecord(rec, now, 0);
        // Keep the local time of creation: adoptRecord's createdAtMs is for adoption after an unknown create.
        const { createdAtMs: _ignored, ...patch } = a.patch;
        moves.push({
          row,
          from: 'PENDING',
          to: a.to,
          patch: { ...patch, ...polled },
          history: { event: 'settled', outcome: rec.status, detail: rec.completeTime ?? undefined },
        });
      }
    }
    await applyRowMoves(db, moves, now);
    return moves.filter((m) => m.to !== 'PENDING').length;
  }

  private async reschedule(rows: PayoutRow[], at: number): Promise<void> {
    await this.deps
      .db('payouts')
      .whereIn(
        'id',
        rows.map((r) => r.id),
      )
      .andWhere({ state: 'PENDING' })
      .update({ next_poll_at: at });
  }

  private async flagStale(): Promise<void> {
    const { db, clock, logger } = this.deps;
    const now = clock.now();
    const stale = await listStalePending(db, now - this.o.staleAfterMs, 1000);
    for (const row of stale) {
      logger.error(
        {
          batchId: row.batchId,
          line: row.line,
          merchantReferenceId: row.merchantReferenceId,
          payoutId: row.payoutId,
          pendingForMs: now - (row.createdAtMs ?? now),
        },
        'STALE PAYOUT: still PENDING past the configured age; still following it',
      );
    }
    await flagStale(
      db,
      stale.map((r) => r.id),
      now,
    );
  }
}
